"""The machine xlsxplan runs on: its physical memory, and the address-space cap the command line sets itself."""

from __future__ import annotations

import os

__all__ = ["PHYSICAL_SHARE", "MEMORY_LIMIT_GB", "physical_memory_gib", "address_space_cap_gb", "limit_address_space"]

PHYSICAL_SHARE = 0.8
"""The share of physical memory the command line's address-space cap never exceeds."""
MEMORY_LIMIT_GB = 16
"""The memory a workbook may take by default when it is recalculated headlessly [GB]
(``xlsxplan.headless.untrusted.Limits.max_memory_gb``); ``xlsxplan eval`` caps itself by it too."""


def physical_memory_gib() -> float:
    """This machine's physical memory [GiB], or 0 when the platform does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024**3
    except (AttributeError, ValueError, OSError):
        return 0.0


def address_space_cap_gb(max_memory_gb: float) -> float:
    """The address-space cap the command line sets for itself [GiB] (:func:`limit_address_space`).

    The memory a workbook may take (``max_memory_gb`` [GB], the headless engine's limit), plus headroom for what shared
    libraries, thread stacks and malloc arenas reserve beyond what they use (8 GiB, or 1 GiB per core if that is more),
    but never more than 80% of the physical memory (:data:`PHYSICAL_SHARE`): an allocation past it fails in its cell
    instead of the kernel ending the process or the machine swapping (16 + 8 = 24 GiB would be all of a 24 GiB machine).
    """
    wanted = max_memory_gb + max(8, os.cpu_count() or 1)
    physical = physical_memory_gib()
    return min(wanted, PHYSICAL_SHARE * physical) if physical else wanted


def limit_address_space(gigabytes: float) -> bool:
    """Cap this process's address space (``RLIMIT_AS``) so that a runaway allocation raises MemoryError.

    A formula can ask for more memory than any limit on the file can foresee (``=MUNIT(100000)``,
    ``=REPT("x",1E10)``); with the cap, the allocation fails with MemoryError, which becomes an error value in that
    cell (or one line and exit status 2), instead of the kernel killing the process or the machine swapping. The
    command line sets it; the Python API leaves the caller's process alone. Returns False where the platform has
    no such limit (Windows) or a lower one is already set.
    """
    try:
        import resource
    except ImportError:
        return False
    want = int(gigabytes * 1024**3)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY and soft <= want:
        return False
    if hard != resource.RLIM_INFINITY and hard < want:
        want = hard
    try:
        resource.setrlimit(resource.RLIMIT_AS, (want, hard))
    except (ValueError, OSError):
        return False
    return True
