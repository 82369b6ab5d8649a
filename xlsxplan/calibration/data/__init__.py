"""Data shipped with xlsxplan: the published measurements and the efficiencies fitted on them."""
