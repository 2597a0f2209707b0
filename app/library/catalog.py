"""The catalogue of well-known models (`resources/models-catalog.json`), validated at load.

Guarantees: every entry has at least one file, each with an https URL, its size and its
sha256 (64 hex digits), so a catalogue download is always checked; a split model's files
are listed in part order and land in one folder; a damaged catalogue is a `ResourceError`
that says what is wrong (the app works without it: pasting a URL still downloads).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.errors import InvalidInputError, ResourceError, validation_problems
from app.library.download import DownloadRequest
from app.readback import read_json
from app.resources import resource_path

CATALOG = "models-catalog.json"
CATALOG_LIMIT = 16 << 20  # bytes


class CatalogFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(pattern=r"^https://\S+$", description="A direct link to the file.")
    size: int = Field(gt=0, description="Bytes.")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class CatalogModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    name: str
    publisher: str = ""
    licence: str = ""
    architecture: str = ""
    quantization: str = ""
    parameters: str = ""
    context_length: int = 0
    description: str = ""
    files: tuple[CatalogFile, ...] = Field(min_length=1)

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)

    def requests(self, dest: Path) -> list[DownloadRequest]:
        """One download per file, all into `dest`."""
        return [DownloadRequest(f.url, dest, sha256=f.sha256, size=f.size) for f in self.files]


class Catalog(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = 1
    note: str = ""
    models: tuple[CatalogModel, ...]

    def find(self, model_id: str) -> CatalogModel | None:
        return next((m for m in self.models if m.id == model_id), None)


def load_catalog(path: Path | None = None) -> Catalog:
    """The bundled catalogue (or the one at `path`)."""
    path = path or resource_path(CATALOG)
    try:
        return Catalog.model_validate(read_json(path, CATALOG_LIMIT))
    except (InvalidInputError, ValueError) as exc:
        problem = validation_problems(exc) if isinstance(exc, ValidationError) else str(exc)
        raise ResourceError(f"The model catalogue {path} is damaged ({problem}).") from exc
