"""What the spreadsheet faces share, above the registry: how a cell's value becomes a function's argument and back
(:mod:`.cells`), each registry function as a native Excel formula and the catalog as sheet tables (:mod:`.native`),
the frozen-values block of a portable workbook (:mod:`.portable_layout`) and the ``xlwings.conf`` sheet
(:mod:`.xlwings_conf`). The faces (excel, headless, templates, cli) import these; none of them imports another face.
"""
