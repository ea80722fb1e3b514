"""Router: sentence-transformers 5's module whose routes are module sequences, one per task.

In sentence-transformers a model is a sequence of modules and the Router is one of them, its routes
(``query``, ``document``...) themselves sequences of modules; ``encode(task=...)`` picks the route.
sbert reads and writes the same folder: ``router_config.json`` (``types``, ``structure``,
``parameters``) and one folder per module of each route, named by its id (``query_0_Transformer``).
The model holding a Router (:class:`~sbert.SentenceEncoder`) runs each route as its own stack.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from torch import nn

from sbert.base.errors import ModelLoadError
from sbert.base.files import read_json
from sbert.modules.module import Module, load_module, module_class, save_module, write_json
from sbert.modules.pooling import Pooling

Stack = tuple[Any, Pooling | None, list[nn.Module]]  # input module, its pooling, layers after it


def sequence(
    input_module: nn.Module, pooling: nn.Module | None, layers: Sequence[nn.Module]
) -> list[nn.Module]:
    """A stack as sentence-transformers lists its modules: a module that pools by itself (a static
    table) has no Pooling after it."""
    pools = getattr(input_module, "pools", False)
    return [input_module, *([pooling] if pooling is not None and not pools else []), *layers]


class Router(Module):
    """One module sequence per task, as sentence-transformers' ``Router`` holds them.

    Args:
        routes: Each route's modules by name, in order: an input module (``Transformer``,
            ``StaticEmbedding``), its ``Pooling`` (none after a module that pools by itself),
            then layers (``Dense``, ``Normalize``...).
        default_route: The route of an ``encode()`` without ``task``; ``None``: it needs one.

    Raises:
        ValueError: no routes, or a ``default_route`` that is not one of them.

    Examples:
        >>> import torch
        >>> from tokenizers import Tokenizer, models
        >>> from sbert.modules import Normalize, StaticEmbedding
        >>> table = StaticEmbedding(Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]")), torch.ones(1, 4))
        >>> router = Router({"query": [table, Normalize()], "document": [table]}, default_route="document")
        >>> router.route_names, router.stack("query")[2]
        (('query', 'document'), [Normalize()])
    """

    st_type = "sentence_transformers.models.Router"
    config_file_name = "router_config.json"

    def __init__(self, routes: Mapping[str, Sequence[nn.Module]], default_route: str | None = None) -> None:
        super().__init__()
        if not routes:
            raise ValueError("a Router model needs at least one route")
        if default_route is not None and default_route not in routes:
            raise ValueError(f"default_route {default_route!r} is not a route ({', '.join(routes)})")
        self.routes = nn.ModuleDict({name: nn.ModuleList(modules) for name, modules in routes.items()})
        self.default_route = default_route
        self.source: Path | None = None  # the config file it was read from, which messages name
        self.folders: dict[str, list[Path]] = {}  # each route's module folders, once read

    @property
    def route_names(self) -> tuple[str, ...]:
        return tuple(self.routes)

    @property
    def own_route(self) -> str:
        """The route a model holding this Router runs as its own: the default, else the first."""
        return self.default_route or next(iter(self.routes))

    def stack(self, name: str, after: Sequence[nn.Module] = ()) -> Stack:
        """Route ``name`` as an input module, its ``Pooling`` (``None`` where the route has none)
        and the layers after it, followed by ``after`` (the modules after the Router)."""
        first, *rest = self.modules_of(name)
        pooling = rest[0] if rest and isinstance(rest[0], Pooling) else None
        return first, pooling, [*rest[pooling is not None :], *after]

    def modules_of(self, name: str) -> list[nn.Module]:
        """Route ``name``'s modules, in order."""
        return list(cast(nn.ModuleList, self.routes[name]))

    @classmethod
    def load(cls, folder: Path, **options: Any) -> Router:
        """Read ``router_config.json`` (sentence-transformers' older name: ``config.json``) and every
        route's modules from the folders it names.

        Raises:
            ModelLoadError: naming the config file: a key missing, ``route_mappings`` (sbert routes
                by task name), a route naming no module folder of ``types``, no routes, or a
                ``default_route`` that is none of them.
        """
        config_file = folder / cls.config_file_name
        if not config_file.is_file() and (folder / "config.json").is_file():
            config_file = folder / "config.json"  # sentence-transformers' older name (Asym)
        config = read_json(config_file)
        try:
            types, structure = dict(config["types"]), dict(config["structure"])
            parameters = dict(config.get("parameters", {}))
        except (KeyError, TypeError, ValueError) as error:
            raise ModelLoadError(
                f"{config_file}: expected 'types', 'structure' and 'parameters': {error}"
            ) from error
        if parameters.get("route_mappings"):
            raise ModelLoadError(
                f"{config_file}: route_mappings (routes by task and modality) are not read; sbert routes by task name"
            )
        routes = {
            name: _route(folder, config_file, name, ids, types, options) for name, ids in structure.items()
        }
        if not routes:
            raise ModelLoadError(f"{config_file}: has no routes")
        default = parameters.get("default_route")
        if default is None and parameters.get("allow_empty_key", True):
            default = next(iter(routes))  # sentence-transformers' choice
        if default is not None and default not in routes:
            raise ModelLoadError(
                f"{config_file}: default_route {default!r} is not a route ({', '.join(routes)})"
            )
        router = cls(routes, default)
        router.source = config_file
        router.folders = {
            name: [folder / str(model_id) for model_id in ids] for name, ids in structure.items()
        }
        return router

    def save(self, folder: Path) -> None:
        """``router_config.json`` and one folder per module of each route (``query_0_Transformer``...)."""
        types: dict[str, str] = {}
        structure: dict[str, list[str]] = {}
        for name in self.routes:
            structure[name] = []
            for position, module in enumerate(self.modules_of(name)):
                kind = getattr(module, "written_type", "") or getattr(module, "st_type", "")
                model_id = f"{name}_{position}_{kind.rsplit('.', 1)[-1] or type(module).__name__}"
                types[model_id] = save_module(module, folder / model_id)
                structure[name].append(model_id)
        parameters: dict[str, Any] = {
            "default_route": self.default_route,
            "allow_empty_key": False,
            "route_mappings": {},
        }
        write_json(
            folder / self.config_file_name, {"types": types, "structure": structure, "parameters": parameters}
        )

    def extra_repr(self) -> str:
        return f"routes={list(self.routes)}, default_route={self.default_route!r}"


def _route(
    folder: Path,
    config_file: Path,
    name: str,
    ids: Sequence[Any],
    types: dict[str, Any],
    options: dict[str, Any],
) -> list[nn.Module]:
    """The modules of route ``name``: each id a folder beside the config, nothing that leads elsewhere."""
    modules: list[nn.Module] = []
    for model_id in ids:
        if (
            not isinstance(model_id, str)
            or model_id not in types
            or model_id in (".", "..")
            or not re.fullmatch(r"[\w.-]+", model_id)
        ):
            raise ModelLoadError(
                f"{config_file}: route {name!r} lists {model_id!r}, which is not a module folder in 'types'"
            )
        if module_class(str(types[model_id])) is Router:
            raise ModelLoadError(
                f"{config_file}: module type {types[model_id]!r} is not supported (a Router must come first)"
            )
        modules.append(load_module(types[model_id], folder / model_id, config_file, **options))
    return modules
