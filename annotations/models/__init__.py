"""Kernel Studio's data model, one module per area (design.md "Domain")."""

from annotations.models.chat import ChatMessage, ChatThread
from annotations.models.export import ExportSnapshot
from annotations.models.extraction import ExtractedKernel, KernelExtraction
from annotations.models.ingest import ImportBatch
from annotations.models.llm import EndpointOverride, GenerationItem, GenerationJob, PreEvalAttempt
from annotations.models.review import AuditEvent, Comment, Review, ReviewAssignment
from annotations.models.runs import Run, RunRevision, VerificationBatch
from annotations.models.samples import Revision, RevisionKind, Sample, SampleStatus, Tag
from annotations.models.users import Role, User

__all__ = [
    "AuditEvent",
    "ChatMessage",
    "ChatThread",
    "Comment",
    "EndpointOverride",
    "ExportSnapshot",
    "ExtractedKernel",
    "GenerationItem",
    "GenerationJob",
    "ImportBatch",
    "KernelExtraction",
    "PreEvalAttempt",
    "Review",
    "ReviewAssignment",
    "Revision",
    "RevisionKind",
    "Role",
    "Run",
    "RunRevision",
    "Sample",
    "SampleStatus",
    "Tag",
    "User",
    "VerificationBatch",
]
