"""Infrastructure under everything: atomic file writing (:mod:`.fileio`), zip-package checks (:mod:`.zipfiles`),
process limits (:mod:`.system`), sheet text (:mod:`.text`) and element-by-element arithmetic over scalars or numpy
columns (:mod:`.elementwise`). No math, no data, no face: only the basics (errors) below it.
"""
