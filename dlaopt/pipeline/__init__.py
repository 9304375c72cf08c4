"""The compile pipeline (``dlaopt compile``): one network through mapping → tensor pinning → bank mapping → (on a
platform) job assignment, each stage verified by its problem's evaluator; see :mod:`dlaopt.pipeline.compile`."""

from dlaopt.pipeline.compile import DEFAULT_METHODS, STAGES, CompileOptions, CompileReport, compile_network
from dlaopt.pipeline.inputs import hardware_document, workload_document
from dlaopt.pipeline.report import report_markdown, write_report
from dlaopt.pipeline.stages import StageFailed, StageOutcome

__all__ = ["DEFAULT_METHODS", "STAGES", "CompileOptions", "CompileReport", "StageFailed", "StageOutcome",
           "compile_network", "hardware_document", "report_markdown", "workload_document", "write_report"]
