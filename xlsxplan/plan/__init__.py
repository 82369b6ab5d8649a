"""The option searches over the core and the catalog: which accelerator, precision, replica size and fleet serve a
workload at a target, ranked by cost (:mod:`.search`), and the same table one cell at a time for a sheet
(:mod:`.cells`).

The plan sits under the registry, not beside the faces, because PLAN_OPTIONS and PLAN_OPTIONS_AT are Excel functions:
the registry imports the search, and every face reaches it through the registry or directly from below.
"""
