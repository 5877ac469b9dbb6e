"""Where a sweep's cells run: the options every ``dyntools sweep`` command shares, declared once.

A sweep command's parameter dataclass derives from :class:`SweepBackendParams` and so gains ``--workers``,
``--dask-local``, ``--scheduler``, ``--connect-timeout`` and ``--retries`` (in the help group
:data:`GROUP`); :meth:`SweepBackendParams.backend` hands them to :func:`dyntools.sweep.run_sweep`.
"""

from __future__ import annotations

from dataclasses import dataclass

from dyntools.params import param

#: the help group of the backend options
GROUP = "where the cells run"


@dataclass(frozen=True)
class SweepBackendParams:
    """Local worker processes (the default), a Dask LocalCluster, or an existing Dask cluster."""

    workers: int | None = param(None, kind="int", low=1, high=1024, group=GROUP,
                                help="local worker processes (default: all cores)")
    dask_local: int | None = param(None, kind="int", low=1, high=1024, metavar="N", group=GROUP,
                                   help="run on a Dask LocalCluster of N worker processes")
    scheduler: str | None = param(None, kind="str", metavar="tcp://HOST:PORT", group=GROUP,
                                  help="run on an existing Dask cluster")
    connect_timeout: float = param(10.0, low=0.0, low_open=True, group=GROUP, help="seconds to reach --scheduler")
    retries: int = param(2, low=0, high=100, group=GROUP,
                         help="times a cell is submitted again after its worker died or it failed (Dask), or the "
                              "local pool restarted after a process died")

    def backend(self) -> dict:
        """The keyword arguments of :func:`dyntools.sweep.run_sweep` that say where the cells run."""
        return {"workers": self.workers, "dask_local": self.dask_local, "scheduler": self.scheduler,
                "connect_timeout": self.connect_timeout, "retries": self.retries}

    def check_backend(self) -> None:
        """Refuse a backend that cannot run: ``--dask-local`` with ``--scheduler``, a malformed address, a count
        below one (:func:`dyntools.sweep.check_backend`)."""
        from dyntools import sweep

        sweep.check_backend(self.workers, self.dask_local, self.scheduler)
