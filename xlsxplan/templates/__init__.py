"""Template workbooks: the serving plan and the training plan, built with openpyxl and recalculated headlessly.

:mod:`.layout` holds the styles and layout both share; :mod:`.serving` and :mod:`.training` describe each template's
rows; :mod:`.build` writes them, recalculates them with the Workbook API it is given
(:class:`xlsxplan.headless.Workbook`, from the command line) and reads the summary
back from the recalculated cells.
"""
