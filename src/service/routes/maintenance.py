"""`paperscope check` through the server: Milvus Lite lets one process hold the store, so while `paperscope serve`
runs, the check (and its repair) runs in it (`paperscope check --server URL`)."""

from __future__ import annotations

from fastapi import APIRouter

from ...rag.check import CheckReport, check_store, record, repair
from ..state import ServiceDep
from .documents import KbQuery

router = APIRouter(tags=["maintenance"])


@router.get("/v1/check", response_model=CheckReport, summary="Check a knowledge base")
async def check(service: ServiceDep, kb: KbQuery = None) -> CheckReport:
    """Compare the catalogue with the stored chunks, as `paperscope check --json` prints it; nothing is changed."""
    target = service.library.get(kb)

    def run() -> CheckReport:
        # After the running ingest job: a paper it is writing is not ready yet, which is no problem to report.
        with service.jobs.write_lock:
            report = check_store(target.store)
        record(service.library.home, report)  # beside the store, where `ingest` looks for the last check
        return report

    return await service.run(run)


@router.post("/v1/check/repair", response_model=CheckReport, summary="Check a knowledge base and repair it")
async def check_repair(service: ServiceDep, kb: KbQuery = None) -> CheckReport:
    """Check, then repair what can be repaired, as `paperscope check --repair --json` does."""
    target = service.library.get(kb)

    def run() -> CheckReport:
        with service.jobs.write_lock:  # one writer at a time: never in the middle of an ingest
            report = check_store(target.store)
            if report.problems:
                report = repair(target.store, report, target.settings())
        record(service.library.home, report)
        return report

    return await service.run(run)
