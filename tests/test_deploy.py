"""Offline checks of ``deploy/``: the image pins, the Kubernetes manifests, the DaskJob, daskhub values.

Built-in kinds are validated with ``kubernetes-validate`` (the official Kubernetes JSON schemas) in
strict mode, where an unknown field is an error as with ``kubectl apply``'s strict field validation,
for the oldest Kubernetes release we document and the newest the package knows. The ``DaskJob`` is
validated against the openAPIV3Schema of the CRD that the ``dask-kubernetes`` package ships,
converted here to JSON Schema, and its embedded pod and Service specs against the built-in schemas
too. Cross-references the schemas cannot see (selectors, ConfigMap and Secret names, commands,
image tags) are checked as well. Negative tests break copies of the real files to show that every
check fails when it should.
"""

from __future__ import annotations

import copy
import functools
import importlib.metadata
import importlib.resources
import importlib.util
import json
import posixpath
import re
import shlex
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from referencing import Registry, Resource

import biasdask

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
DOCKERFILE = DEPLOY / "docker" / "Dockerfile"
REQUIREMENTS = DEPLOY / "docker" / "requirements.txt"
DOCKERIGNORE = DEPLOY / "docker" / "Dockerfile.dockerignore"
K8S = DEPLOY / "k8s"
DASKHUB_VALUES = DEPLOY / "helm" / "daskhub-values.yaml"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
VERSION = biasdask.__version__
# What `docker build -t biasdask:<version>` produces, optionally pushed under a registry prefix.
IMAGE = re.compile(rf"^(?:[^/\s]+/)*biasdask:{re.escape(VERSION)}$")
# The oldest Kubernetes minor release the manifests are meant for, and the newest with schemas.
KUBERNETES_VERSIONS = ("1.30", kubernetes_validate.latest_version().rsplit(".", 1)[0])
OPERATOR_CRD_DIR = Path("operator", "deployment", "helm", "dask-kubernetes-operator", "crds")
DNS1123_SUBDOMAIN = re.compile(r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_documents(path: Path) -> list[dict]:
    """Every non-empty document of a (multi-document) YAML file."""
    return [doc for doc in yaml.load_all(path.read_text(encoding="utf-8"), Loader=_Loader) if doc is not None]


K8S_FILES = sorted(K8S.glob("*.yaml"))
DOCUMENTS = [(path, i) for path in K8S_FILES for i in range(len(load_documents(path)))]


def _all_documents() -> list[dict]:
    return [doc for path in K8S_FILES for doc in load_documents(path)]


def _one(kind: str) -> dict:
    found = [doc for doc in _all_documents() if doc.get("kind") == kind]
    assert len(found) == 1, f"expected one {kind} in {K8S}, found {len(found)}"
    return copy.deepcopy(found[0])


# --------------------------------------------------------------------------------------------
# OpenAPI v3 (CRD structural schema) -> JSON Schema 2020-12


_COPIED = {
    "type",
    "enum",
    "required",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "multipleOf",
    "minProperties",
    "maxProperties",
}
# Annotations only; `format` is not asserted (the API server ignores unknown formats such as
# int-or-string, and int32/int64 bounds are not what these manifests could get wrong).
_ANNOTATIONS = {"description", "default", "format", "example", "title", "externalDocs"}
_STRUCTURE = {
    "properties",
    "items",
    "additionalProperties",
    "nullable",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "exclusiveMinimum",
    "exclusiveMaximum",
}
_EXTENSIONS = {
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
}


def openapi_to_jsonschema(node: dict, path: str = "#") -> dict:
    """Convert a CRD's OpenAPI v3 structural schema node to JSON Schema (draft 2020-12).

    Objects that list ``properties`` reject unknown fields unless
    ``x-kubernetes-preserve-unknown-fields`` is set (strict field validation); ``nullable`` adds
    ``null``; ``x-kubernetes-int-or-string`` accepts an integer or a string;
    ``x-kubernetes-embedded-resource`` admits ``apiVersion``, ``kind`` and ``metadata``; list type
    ``set`` requires unique items. A keyword this converter does not know (such as
    ``x-kubernetes-validations``, CEL rules) raises ``ValueError`` rather than being ignored.
    """
    unknown = set(node) - _COPIED - _ANNOTATIONS - _STRUCTURE - _EXTENSIONS
    if unknown:
        raise ValueError(f"{path}: unsupported OpenAPI keyword(s) {sorted(unknown)}")
    out: dict[str, Any] = {k: copy.deepcopy(node[k]) for k in _COPIED if k in node}
    if "properties" in node:
        out["properties"] = {
            name: openapi_to_jsonschema(sub, f"{path}/properties/{name}") for name, sub in node["properties"].items()
        }
    if "items" in node:
        out["items"] = openapi_to_jsonschema(node["items"], f"{path}/items")
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        out["additionalProperties"] = openapi_to_jsonschema(extra, f"{path}/additionalProperties")
    elif extra is not None:
        out["additionalProperties"] = extra
    for key in ("allOf", "anyOf", "oneOf"):
        if key in node:
            out[key] = [openapi_to_jsonschema(sub, f"{path}/{key}/{i}") for i, sub in enumerate(node[key])]
    if "not" in node:
        out["not"] = openapi_to_jsonschema(node["not"], f"{path}/not")
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if node.get(bound) and limit in out:  # OpenAPI 3.0 booleans -> 2020-12 numbers
            out[bound] = out.pop(limit)
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("allOf", []).append({"type": ["integer", "string"]})
    if node.get("x-kubernetes-embedded-resource"):
        props = out.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props.setdefault("metadata", {"type": "object"})
    if node.get("x-kubernetes-list-type") == "set":
        out["uniqueItems"] = True
    is_object = node.get("type") == "object" or "properties" in node
    if is_object and extra is None and not node.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    if node.get("nullable"):
        if "type" in out:
            out["type"] = [*([out["type"]] if isinstance(out["type"], str) else out["type"]), "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    return out


def crd_resource_schemas(crd: dict) -> dict[tuple[str, str], dict]:
    """JSON Schemas of a CRD's served versions, keyed by ``(apiVersion, kind)``.

    The API server checks ``apiVersion``, ``kind`` and ``metadata`` itself, whatever the CRD says;
    the root schema admits them (``metadata`` is checked against ObjectMeta separately).
    """
    group = crd["spec"]["group"]
    kind = crd["spec"]["names"]["kind"]
    schemas = {}
    for version in crd["spec"]["versions"]:
        if not version.get("served", True):
            continue
        api_version = f"{group}/{version['name']}"
        schema = openapi_to_jsonschema(version["schema"]["openAPIV3Schema"])
        schema.setdefault("properties", {}).update(
            apiVersion={"const": api_version}, kind={"const": kind}, metadata={"type": "object"}
        )
        schema["required"] = sorted({*schema.get("required", ()), "apiVersion", "kind", "metadata"})
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        schemas[(api_version, kind)] = schema
    return schemas


@functools.cache
def _operator_crd_schemas(kind: str) -> dict[tuple[str, str], dict]:
    spec = importlib.util.find_spec("dask_kubernetes")
    assert spec is not None and spec.submodule_search_locations, "dask-kubernetes is not installed"
    path = Path(spec.submodule_search_locations[0]) / OPERATOR_CRD_DIR / f"{kind.lower()}.yaml"
    assert path.exists(), f"no CRD for {kind} in dask-kubernetes ({path})"
    return crd_resource_schemas(yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader))


@functools.cache
def operator_validator(api_version: str, kind: str) -> jsonschema.Draft202012Validator:
    """The validator of a Dask operator resource, from the CRD that dask-kubernetes ships."""
    schemas = _operator_crd_schemas(kind)
    assert (api_version, kind) in schemas, f"no CRD for {api_version} {kind}; dask-kubernetes serves {sorted(schemas)}"
    return jsonschema.Draft202012Validator(schemas[(api_version, kind)])


# --------------------------------------------------------------------------------------------
# Validation of one manifest


@functools.cache
def _definitions(version: str) -> Resource:
    return Resource.from_contents(_schema_file(version, "_definitions.json"))


def _schema_file(version: str, name: str) -> dict:
    """A JSON file of kubernetes-validate's strict schemas for a Kubernetes ``major.minor``."""
    (full,) = {v for v in kubernetes_validate.utils.all_versions() if v.rsplit(".", 1)[0] == version}
    path = importlib.resources.files("kubernetes_validate") / "kubernetes-json-schema" / f"v{full}-local-strict" / name
    return json.loads(path.read_text(encoding="utf-8"))


@functools.cache
def builtin_validator(api_version: str, kind: str, version: str) -> jsonschema.Draft202012Validator:
    """The strict validator of a built-in kind, as ``kubernetes_validate.validate(strict=True)`` builds it.

    Cached: the package re-reads its multi-megabyte definitions on every call.
    """
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    schema = _schema_file(version, f"{kind.lower()}-{group_version}.json")
    registry = _definitions(version) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry)


class ManifestError(AssertionError):
    """A manifest failed its schema: which document, where in it, and why, on one line."""


def _check(validator: jsonschema.Draft202012Validator, doc: dict, what: str) -> None:
    # best_match is what Validator.validate raises; its str() would pretty-print the whole schema.
    error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if error is not None:
        location = "/".join(map(str, error.absolute_path)) or "(root)"
        raise ManifestError(f"{what}: {location}: {error.message}")


def validate_builtin(doc: dict) -> None:
    """Validate a built-in kind strictly against each Kubernetes version of KUBERNETES_VERSIONS."""
    for version in KUBERNETES_VERSIONS:
        validator = builtin_validator(doc["apiVersion"], doc["kind"], version)
        _check(validator, doc, f"{doc['kind']} {doc['metadata'].get('name')} (Kubernetes {version})")


# Pod and Service specs inside the operator's resources: (path to a PodSpec or ServiceSpec, kind).
_EMBEDDED_SPECS = {
    "DaskJob": [
        (("spec", "job", "spec"), "Pod"),
        (("spec", "cluster", "spec", "scheduler", "spec"), "Pod"),
        (("spec", "cluster", "spec", "worker", "spec"), "Pod"),
        (("spec", "cluster", "spec", "scheduler", "service"), "Service"),
    ],
}


def _get(doc: dict, path: tuple[str, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def validate_custom(doc: dict) -> None:
    """Validate a Dask operator resource against its CRD, then its pod/Service specs as built-ins."""
    what = f"{doc['kind']} {doc['metadata'].get('name')} (CRD)"
    _check(operator_validator(doc["apiVersion"], doc["kind"]), doc, what)
    for path, kind in _EMBEDDED_SPECS.get(doc["kind"], []):
        validate_builtin({"apiVersion": "v1", "kind": kind, "metadata": doc["metadata"], "spec": _get(doc, path)})


def validate_document(doc: dict) -> None:
    """Validate one manifest: a Dask operator resource against its CRD, anything else as a built-in."""
    if str(doc.get("apiVersion", "")).startswith("kubernetes.dask.org/"):
        validate_custom(doc)
    else:
        validate_builtin(doc)


# --------------------------------------------------------------------------------------------
# Cross-references: what a schema cannot see


@functools.cache
def dask_subcommand_options(subcommand: str) -> frozenset[str] | None:
    """Options of ``dask <subcommand>`` in the installed dask CLI (None: no such subcommand).

    The subcommands come from packages' ``dask_cli`` entry points (distributed: scheduler, worker).
    """
    entry_points = {ep.name: ep for ep in importlib.metadata.entry_points(group="dask_cli")}
    if subcommand not in entry_points:
        return None
    command = entry_points[subcommand].load()  # a click command
    return frozenset(opt for param in command.params for opt in (*param.opts, *param.secondary_opts))


def _argv(container: dict) -> list[str]:
    return [str(a) for a in container.get("command", []) + container.get("args", [])]


def _dask_command_problems(argv: list[str], subcommand: str, where: str) -> list[str]:
    if argv[:2] != ["dask", subcommand]:
        return [f"{where}: runs {argv[:2]}, expected ['dask', '{subcommand}']"]
    options = dask_subcommand_options(subcommand)
    if options is None:
        return [f"{where}: the installed dask CLI has no '{subcommand}' subcommand"]
    unknown = [arg for arg in argv[2:] if arg.startswith("--") and arg.split("=")[0] not in options]
    return [f"{where}: dask {subcommand} has no option {arg}" for arg in unknown]


def pod_problems(pod: dict, configmaps: dict[str, dict], secrets: dict[str, dict], where: str) -> list[str]:
    """Images, ConfigMap/Secret references and the study mount of a pod spec."""
    problems = []
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for volume in volumes.values():
        if "configMap" in volume:
            name = volume["configMap"]["name"]
            if name not in configmaps:
                problems.append(f"{where}: volume {volume['name']} uses ConfigMap {name}, not in deploy/k8s")
        if "secret" in volume and volume["secret"]["secretName"] not in secrets:
            problems.append(f"{where}: volume {volume['name']} uses an unknown Secret")
    for container in pod.get("containers", []) + pod.get("initContainers", []):
        at = f"{where}/{container['name']}"
        if not IMAGE.match(container.get("image", "")):
            problems.append(f"{at}: image {container.get('image')!r} is not biasdask:{VERSION}")
        for source in container.get("envFrom", []):
            if "secretRef" in source and source["secretRef"]["name"] not in secrets:
                problems.append(f"{at}: envFrom Secret {source['secretRef']['name']} not in deploy/k8s")
            if "configMapRef" in source and source["configMapRef"]["name"] not in configmaps:
                problems.append(f"{at}: envFrom ConfigMap {source['configMapRef']['name']} not in deploy/k8s")
        for env in container.get("env", []):
            ref = env.get("valueFrom", {}).get("secretKeyRef")
            if ref and ref["key"] not in secrets.get(ref["name"], {}):
                problems.append(f"{at}: env {env['name']} reads {ref['name']}/{ref['key']}, which does not exist")
        mounts = {m["mountPath"]: m for m in container.get("volumeMounts", [])}
        for mount in mounts.values():
            if mount["name"] not in volumes:
                problems.append(f"{at}: volumeMount {mount['name']} has no volume")
        argv = _argv(container)
        if argv[:2] == ["biasdask", "run"]:
            config = argv[2] if len(argv) > 2 else ""
            mount = mounts.get(posixpath.dirname(config))
            volume = volumes.get(mount["name"]) if mount else None
            cm = configmaps.get(volume["configMap"]["name"]) if volume and "configMap" in volume else None
            if cm is None or posixpath.basename(config) not in cm.get("data", {}):
                problems.append(f"{at}: {config!r} is not a key of a ConfigMap mounted at its directory")
    return problems


def daskjob_problems(doc: dict, configmaps: dict[str, dict], secrets: dict[str, dict]) -> list[str]:
    """The DaskJob's wiring: cluster name, scheduler Service, commands, pods."""
    from dask_kubernetes.constants import VALID_CLUSTER_NAME

    name = doc["metadata"]["name"]
    problems = []
    if not VALID_CLUSTER_NAME.match(name):
        problems.append(f"DaskJob name {name!r} is not a valid DaskCluster name")
    job = doc["spec"]["job"]["spec"]
    cluster = doc["spec"]["cluster"]["spec"]
    scheduler, worker = cluster["scheduler"], cluster["worker"]
    problems += pod_problems(job, configmaps, secrets, "job")
    problems += pod_problems(scheduler["spec"], configmaps, secrets, "scheduler")
    problems += pod_problems(worker["spec"], configmaps, secrets, "worker")
    job_argv = _argv(job["containers"][0])
    if job_argv[:3] != ["biasdask", "run", "/config/study.yaml"]:
        problems.append(f"job: runs {job_argv}, expected biasdask run /config/study.yaml")
    problems += _dask_command_problems(_argv(scheduler["spec"]["containers"][0]), "scheduler", "scheduler")
    problems += _dask_command_problems(_argv(worker["spec"]["containers"][0]), "worker", "worker")
    # The operator names the DaskCluster after the DaskJob and always gives the scheduler pod these.
    pod_labels = {"dask.org/cluster-name": name, "dask.org/component": "scheduler"}
    service = scheduler["service"]
    selector = service.get("selector", {})
    if not selector or any(pod_labels.get(k) != v for k, v in selector.items()):
        problems.append(f"scheduler Service selector {selector} does not select the scheduler pod {pod_labels}")
    ports = {p["name"]: p["containerPort"] for c in scheduler["spec"]["containers"] for p in c.get("ports", [])}
    comm = [p for p in service.get("ports", []) if p["port"] == 8786]
    if not comm:
        problems.append("scheduler Service has no port 8786 (DASK_SCHEDULER_ADDRESS points there)")
    for port in service.get("ports", []):
        target = port.get("targetPort", port["port"])
        if isinstance(target, str) and target not in ports or isinstance(target, int) and target not in ports.values():
            problems.append(f"scheduler Service port {port['name']} targets {target!r}, not a scheduler port")
    return problems


def job_problems(doc: dict, configmaps: dict[str, dict], secrets: dict[str, dict]) -> list[str]:
    """The plain Job: biasdask run with a LocalCluster sized to the pod's CPU, resources set."""
    pod = doc["spec"]["template"]["spec"]
    problems = pod_problems(pod, configmaps, secrets, "job")
    container = pod["containers"][0]
    argv = _argv(container)
    if argv[:3] != ["biasdask", "run", "/config/study.yaml"] or "--workers" not in argv:
        return [*problems, f"job: runs {argv}, expected biasdask run /config/study.yaml --workers N"]
    workers = argv[argv.index("--workers") + 1]
    resources = container.get("resources", {})
    for part in ("requests", "limits"):
        missing = {"cpu", "memory"} - set(resources.get(part, {}))
        if missing:
            problems.append(f"job: resources.{part} lacks {sorted(missing)}")
    cpu = str(resources.get("requests", {}).get("cpu", ""))
    if cpu != workers:
        problems.append(f"job: --workers {workers} but the pod requests cpu {cpu!r}")
    return problems


def _references() -> tuple[dict[str, dict], dict[str, dict]]:
    docs = _all_documents()
    configmaps = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
    secrets = {
        d["metadata"]["name"]: {**d.get("data", {}), **d.get("stringData", {})} for d in docs if d["kind"] == "Secret"
    }
    return configmaps, secrets


# --------------------------------------------------------------------------------------------
# Dockerfile


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` of a Dockerfile, continuation lines joined, comments dropped."""
    instructions, buffer = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            buffer += stripped[:-1] + " "
            continue
        keyword, _, rest = (buffer + stripped).partition(" ")
        instructions.append((keyword.upper(), rest.strip()))
        buffer = ""
    return instructions


def _substitute(value: str, args: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m.group(1) or m.group(2), m.group(0)), value)


BASE_IMAGE = re.compile(r"^ghcr\.io/dask/dask:(?P<dask>\d+\.\d+\.\d+)-py(?P<python>\d+\.\d+)$")


def dockerfile_problems(dockerfile: str, requirements: str, pyproject: dict, dockerignore: str) -> list[str]:
    """Drift between the Dockerfile's base image, requirements.txt, pyproject.toml and the context."""
    instructions = dockerfile_instructions(dockerfile)
    problems: list[str] = []
    args: dict[str, str] = {}
    bases = []
    for keyword, rest in instructions:
        if keyword == "ARG" and not bases:
            name, _, default = rest.partition("=")
            args[name.strip()] = default.strip().strip('"')
        elif keyword == "FROM":
            bases.append(_substitute(rest.split()[0], args))
    if not bases:
        return ["no FROM instruction"]
    match = BASE_IMAGE.match(bases[-1])
    if not match:
        return [f"base image {bases[-1]!r} is not ghcr.io/dask/dask:<version>-py<X.Y>"]
    dask_version, python = match["dask"], match["python"]

    pins = {}
    for line in requirements.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            pins[req.name.lower()] = str(req.specifier)
    deps = {Requirement(d).name.lower(): Requirement(d).specifier for d in pyproject["project"]["dependencies"]}
    for name in ("dask", "distributed"):
        if pins.get(name) != f"=={dask_version}":
            pinned = pins.get(name, " (nothing)")
            problems.append(f"requirements.txt pins {name}{pinned}, base image has {dask_version}")
        if name not in deps or not deps[name].contains(Version(dask_version)):
            problems.append(f"base image dask {dask_version} does not satisfy pyproject {name}{deps.get(name)}")
    requires_python = SpecifierSet(pyproject["project"].get("requires-python", ""))
    if not requires_python.contains(Version(python)):
        problems.append(f"base image Python {python} does not satisfy requires-python {requires_python}")

    ignore = [line.strip() for line in dockerignore.splitlines() if line.strip() and not line.startswith("#")]
    project_dir = None
    for keyword, rest in instructions:
        if keyword == "COPY" and "--from" not in rest:
            *sources, destination = rest.split()
            for source in sources:
                if not (ROOT / source).exists():
                    problems.append(f"COPY {source}: not in the build context (the repository root)")
                if ignore[:1] == ["*"] and f"!{source}" not in ignore and f"!{source}/" not in ignore:
                    problems.append(f"COPY {source}: excluded by {DOCKERIGNORE.name}")
            if "pyproject.toml" in sources:
                project_dir = destination.rstrip("/")
    if project_dir is None:
        return [*problems, "pyproject.toml is never copied into the image"]
    extras = pyproject["project"].get("optional-dependencies", {})
    installs = [rest for keyword, rest in instructions if keyword == "RUN" and project_dir in rest]
    if not installs:
        problems.append(f"no RUN installs the project copied to {project_dir}")
    for wanted in re.findall(re.escape(project_dir) + r"\[([\w,-]+)\]", " ".join(installs)):
        problems += [f"pip installs unknown extra [{e}]" for e in wanted.split(",") if e not in extras]
    return problems


def _dockerfile_inputs() -> tuple[str, str, dict, str]:
    return (
        DOCKERFILE.read_text(encoding="utf-8"),
        REQUIREMENTS.read_text(encoding="utf-8"),
        copy.deepcopy(PYPROJECT),
        DOCKERIGNORE.read_text(encoding="utf-8"),
    )


def test_dockerfile_base_image_matches_pins_and_pyproject():
    assert dockerfile_problems(*_dockerfile_inputs()) == []


@pytest.mark.parametrize(
    ("file", "old", "new", "expected"),
    [
        ("dockerfile", "ARG DASK_VERSION={dask}", "ARG DASK_VERSION=2099.1.0", "requirements.txt pins dask"),
        ("dockerfile", "ARG DASK_VERSION={dask}", "ARG DASK_VERSION=2024.1.0", "does not satisfy pyproject"),
        ("dockerfile", "ARG PYTHON_VERSION={python}", "ARG PYTHON_VERSION=3.9", "requires-python"),
        ("dockerfile", "FROM ghcr.io/dask/dask:", "FROM python:", "is not ghcr.io/dask/dask"),
        ("dockerfile", "COPY biasdask ", "COPY biasdaskk ", "not in the build context"),
        ("dockerfile", "[all]", "[al]", "unknown extra"),
        ("requirements", "distributed=={dask}", "distributed>={dask}", "pins distributed>="),
        ("dockerignore", "!biasdask/\n", "", "excluded by"),
    ],
)
def test_dockerfile_drift_is_detected(file, old, new, expected):
    inputs = dict(zip(("dockerfile", "requirements", "pyproject", "dockerignore"), _dockerfile_inputs()))
    args = dict(re.findall(r"^ARG (DASK_VERSION|PYTHON_VERSION)=(\S+)$", inputs["dockerfile"], re.MULTILINE))
    current = {"dask": args["DASK_VERSION"], "python": args["PYTHON_VERSION"]}
    old, new = old.format(**current), new.format(**current)
    assert old in inputs[file], f"the negative test no longer matches {file}: {old!r}"
    inputs[file] = inputs[file].replace(old, new)
    problems = dockerfile_problems(**inputs)
    assert any(expected in p for p in problems), problems


# --------------------------------------------------------------------------------------------
# Kubernetes manifests


def test_expected_manifests_exist():
    assert {p.name for p in K8S_FILES} >= {"daskjob.yaml", "job.yaml", "configmap.yaml", "secret.example.yaml"}
    kinds = sorted(doc["kind"] for doc in _all_documents())
    assert kinds == ["ConfigMap", "DaskJob", "Job", "Secret"]


@pytest.mark.parametrize(("path", "index"), DOCUMENTS, ids=[f"{p.name}[{i}]" for p, i in DOCUMENTS])
def test_manifest_is_valid(path, index):
    doc = load_documents(path)[index]
    assert DNS1123_SUBDOMAIN.match(doc["metadata"]["name"]), doc["metadata"]["name"]
    validate_document(doc)


def test_daskjob_wiring():
    assert daskjob_problems(_one("DaskJob"), *_references()) == []


@pytest.mark.parametrize(("kind", "file"), [("DaskJob", "daskjob.yaml"), ("Job", "job.yaml")])
def test_resuming_is_a_documented_delete_then_apply(kind, file):
    """Applying a finished DaskJob/Job again changes nothing (the old object stays): resuming needs the
    object deleted first. That works when its name is fixed (``kubectl delete -f`` finds it; a
    ``generateName`` would not) and a failed run is not restarted in place by Kubernetes behind the
    user's back with the old object (DaskJob: ``restartPolicy: Never``)."""
    doc = _one(kind)
    assert doc["metadata"].get("name") and "generateName" not in doc["metadata"]
    if kind == "DaskJob":
        assert doc["spec"]["job"]["spec"]["restartPolicy"] == "Never"
    text = (K8S / file).read_text()
    delete = f"kubectl delete -f deploy/k8s/{file} --ignore-not-found --wait"
    apply = f"kubectl apply -f deploy/k8s/{file}"
    comments = [line.lstrip("# ").strip() for line in text.splitlines() if line.startswith("#")]
    assert delete in comments and comments.index(apply, comments.index(delete)) == comments.index(delete) + 1
    guide = (ROOT / "docs" / "guide" / "clusters.md").read_text()
    assert "kubectl delete -f deploy/k8s/daskjob.yaml --ignore-not-found --wait" in guide


def test_job_wiring():
    assert job_problems(_one("Job"), *_references()) == []


def test_manifest_commands_exist_in_the_cli(monkeypatch, capsys):
    """Every option the manifests pass to `biasdask run` is one `biasdask run --help` lists."""
    from biasdask.cli import main

    used = {
        arg
        for doc in _all_documents()
        for pod in _pod_specs(doc)
        for container in pod["containers"]
        if _argv(container)[:2] == ["biasdask", "run"]
        for arg in _argv(container)
        if arg.startswith("--")
    }
    assert "--workers" in used
    monkeypatch.setattr("sys.argv", ["biasdask", "run", "--help"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code in (0, None)
    listed = set(re.findall(r"--[\w-]+", capsys.readouterr().out))
    assert used <= listed, f"not options of biasdask run: {sorted(used - listed)}"


def test_study_config_is_a_valid_study(monkeypatch):
    """The ConfigMap's study.yaml passes biasdask's own validation, on s3 with the Secret's variables."""
    from biasdask.study.config import parse_config

    configmaps, secrets = _references()
    (secret,) = secrets.values()
    for key in secret:
        monkeypatch.setenv(key, "from-the-secret")
    raw = yaml.safe_load(configmaps["biasdask-study"]["data"]["study.yaml"])
    referenced = re.findall(r"\$\{(\w+)\}", yaml.safe_dump(raw))
    assert referenced and set(referenced) <= set(secret), (referenced, sorted(secret))
    cfg = parse_config(raw)
    assert cfg.output.startswith("s3://")
    assert len(cfg.languages) == 26
    assert all(lang.store.startswith("s3://") for lang in cfg.languages)


def _mutate(doc: dict, path: tuple, value: Any = None, *, delete: bool = False, rename: str | None = None) -> dict:
    doc = copy.deepcopy(doc)
    parent = _get(doc, path[:-1])
    if rename is not None:
        parent[rename] = parent.pop(path[-1])
    elif delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


_WORKER = ("spec", "cluster", "spec", "worker")
_SCHED = ("spec", "cluster", "spec", "scheduler")
_JOB_CONTAINER = ("spec", "job", "spec", "containers", 0)
_JOB_POD_CONTAINER = ("spec", "template", "spec", "containers", 0)


@pytest.mark.parametrize(
    ("mutation", "message"),
    [
        (dict(path=(*_WORKER, "replicas"), rename="replica"), "'replica' was unexpected"),
        (dict(path=(*_WORKER, "replicas"), value="eight"), "is not of type 'integer'"),
        (dict(path=(*_WORKER, "spec", "containers", 0, "image"), rename="imagee"), "'imagee' was unexpected"),
        (dict(path=("spec", "cluster"), rename="clusters"), "'cluster' is a required property"),
        (dict(path=("spec", "job"), delete=True), "'job' is a required property"),
        (dict(path=(*_SCHED, "service", "ports", 0, "targetPort"), value=8786), "is not of type 'string'"),
        (dict(path=(*_JOB_CONTAINER, "resources", "limits", "memory"), value=["2Gi"]), "is not of type 'string'"),
        (dict(path=(*_JOB_CONTAINER, "args"), value="biasdask run"), "is not of type 'array'"),
        (dict(path=("apiVersion",), value="kubernetes.dask.org/v2"), "no CRD for"),
    ],
)
def test_broken_daskjob_fails_validation(mutation, message):
    broken = _mutate(_one("DaskJob"), **mutation)
    with pytest.raises(AssertionError, match=re.escape(message)):
        validate_document(broken)


def test_daskjob_metadata_is_checked_as_builtin_object_meta():
    """The CRD leaves metadata to the API server; the built-in check of the embedded pods catches it."""
    broken = _mutate(_one("DaskJob"), ("metadata", "labels", "app.kubernetes.io/name"), 1)
    operator_validator("kubernetes.dask.org/v1", "DaskJob").validate(broken)
    with pytest.raises(ManifestError, match=r"Pod biasdask-study .*labels/app.kubernetes.io/name: 1 is not of type"):
        validate_document(broken)


def test_cached_validators_agree_with_kubernetes_validate():
    """builtin_validator is kubernetes_validate.validate(strict=True), cached: same verdicts."""
    job = _one("Job")
    broken = _mutate(job, ("spec", "template", "spec", "restartPolicy"), rename="restartPolicyy")
    for version in KUBERNETES_VERSIONS:
        kubernetes_validate.validate(job, version, strict=True)
        builtin_validator("batch/v1", "Job", version).validate(job)
        with pytest.raises(kubernetes_validate.ValidationError) as by_package:
            kubernetes_validate.validate(broken, version, strict=True)
        with pytest.raises(jsonschema.ValidationError) as cached:
            builtin_validator("batch/v1", "Job", version).validate(broken)
        assert "'restartPolicyy' was unexpected" in by_package.value.message
        assert by_package.value.message == cached.value.message


@pytest.mark.parametrize(
    ("kind", "mutation", "message"),
    [
        ("Job", dict(path=("spec", "template", "spec", "restartPolicy"), rename="restartPolicyy"), "'restartPolicyy'"),
        ("Job", dict(path=("spec", "backoffLimit"), value="two"), "'two' is not of type"),
        ("Job", dict(path=(*_JOB_POD_CONTAINER, "resources", "requests", "cpu"), value=[4]), "[4]"),
        ("Job", dict(path=(*_JOB_POD_CONTAINER, "name"), delete=True), "'name' is a required"),
        ("ConfigMap", dict(path=("data", "study.yaml"), value=3), "3 is not of type 'string'"),
        ("Secret", dict(path=("stringData",), rename="stringdata"), "'stringdata' was unexpected"),
    ],
)
def test_broken_builtin_manifest_fails_validation(kind, mutation, message):
    broken = _mutate(_one(kind), **mutation)
    with pytest.raises(ManifestError, match=re.escape(message)):
        validate_document(broken)


@pytest.mark.parametrize(
    ("mutation", "expected"),
    [
        (dict(path=(*_SCHED, "service", "selector", "dask.org/cluster-name"), value="other"), "does not select"),
        (dict(path=(*_SCHED, "service", "ports", 0, "targetPort"), value="tcp"), "not a scheduler port"),
        (dict(path=(*_WORKER, "spec", "containers", 0, "args", 0), value="dask-worker"), "expected ['dask', 'worker']"),
        (dict(path=(*_WORKER, "spec", "containers", 0, "args", 4), value="--nthread"), "has no option --nthread"),
        (dict(path=(*_JOB_CONTAINER, "image"), value="biasdask:0.0.1"), "is not biasdask:"),
        (dict(path=(*_JOB_CONTAINER, "envFrom", 0, "secretRef", "name"), value="creds"), "envFrom Secret creds"),
        (dict(path=(*_JOB_CONTAINER, "volumeMounts", 0, "mountPath"), value="/etc/study"), "not a key of a ConfigMap"),
        (dict(path=(*_JOB_CONTAINER, "args", 2), value="/config/other.yaml"), "expected biasdask run /config/"),
        (dict(path=("metadata", "name"), value="x" * 60), "not a valid DaskCluster name"),
    ],
)
def test_broken_daskjob_wiring_is_detected(mutation, expected):
    problems = daskjob_problems(_mutate(_one("DaskJob"), **mutation), *_references())
    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize(
    ("mutation", "expected"),
    [
        (dict(path=(*_JOB_POD_CONTAINER, "args", 4), value="8"), "--workers 8 but"),
        (dict(path=(*_JOB_POD_CONTAINER, "resources", "limits"), delete=True), "limits lacks"),
        (dict(path=("spec", "template", "spec", "volumes", 0, "configMap", "name"), value="study"), "ConfigMap study"),
    ],
)
def test_broken_job_wiring_is_detected(mutation, expected):
    problems = job_problems(_mutate(_one("Job"), **mutation), *_references())
    assert any(expected in p for p in problems), problems


# --------------------------------------------------------------------------------------------
# The converter on its own


def _validator(openapi: dict) -> jsonschema.Draft202012Validator:
    schema = openapi_to_jsonschema(openapi)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_converter_rejects_unknown_fields_unless_preserved():
    strict = _validator({"type": "object", "properties": {"a": {"type": "string"}}})
    assert strict.is_valid({"a": "x"}) and not strict.is_valid({"a": "x", "b": 1})
    loose = _validator(
        {"type": "object", "properties": {"a": {"type": "string"}}, "x-kubernetes-preserve-unknown-fields": True}
    )
    assert loose.is_valid({"a": "x", "b": 1}) and not loose.is_valid({"a": 1})
    mapping = _validator({"type": "object", "additionalProperties": {"type": "string"}})
    assert mapping.is_valid({"k": "v"}) and not mapping.is_valid({"k": 1})


def test_converter_int_or_string_nullable_and_sets():
    port = _validator({"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]})
    assert port.is_valid(8786) and port.is_valid("http") and not port.is_valid(1.5) and not port.is_valid([1])
    nullable = _validator({"type": "string", "nullable": True, "enum": ["a"]})
    assert nullable.is_valid(None) and nullable.is_valid("a") and not nullable.is_valid("b")
    assert not _validator({"type": "string"}).is_valid(None)
    unique = _validator({"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"})
    assert unique.is_valid(["a", "b"]) and not unique.is_valid(["a", "a"])
    bounded = _validator({"type": "integer", "minimum": 0, "exclusiveMinimum": True})
    assert bounded.is_valid(1) and not bounded.is_valid(0)


def test_converter_embedded_resources_and_unsupported_keywords():
    embedded = _validator(
        {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {"spec": {"type": "object"}}}
    )
    assert embedded.is_valid({"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": {}})
    assert not embedded.is_valid({"spec": {}, "status": {}})
    with pytest.raises(ValueError, match="x-kubernetes-validations"):
        openapi_to_jsonschema({"type": "object", "x-kubernetes-validations": [{"rule": "self.a > 0"}]})


# --------------------------------------------------------------------------------------------
# daskhub values


class _TraitletsConfig:
    """Stands in for the ``c`` of a dask-gateway config file: records ``c.Class.trait = value``."""

    def __init__(self):
        self.__dict__["values"] = {}

    def __getattr__(self, cls):
        values = self.values.setdefault(cls, {})

        class Section:
            def __setattr__(self, trait, value):
                values[trait] = value

        return Section()


def _object(properties: dict, required: tuple[str, ...] = (), closed: bool = False) -> dict:
    schema = {"type": "object", "properties": properties, "required": list(required)}
    return {**schema, "additionalProperties": False} if closed else schema


_QUANTITY = {"type": ["string", "number", "null"]}
_IMAGE = _object(
    {
        "name": {"type": "string"},
        "tag": {"type": "string"},
        "pullPolicy": {"enum": [None, "", "IfNotPresent", "Always", "Never"]},
    },
    required=("name", "tag"),
    closed=True,
)
_GATEWAY_POD = _object(
    {
        "cores": _object({"request": _QUANTITY, "limit": _QUANTITY}, closed=True),
        "memory": _object({"request": _QUANTITY, "limit": _QUANTITY}, closed=True),
        "threads": {"type": ["integer", "null"]},
        "extraPodConfig": {"type": "object"},
        "extraContainerConfig": {"type": "object"},
    },
    closed=True,
)
# The part of the daskhub chart's values that these values set, typed as in the zero-to-jupyterhub
# and dask-gateway charts' own value schemas, with an image required at both places.
VALUES_SCHEMA = _object(
    {
        "jupyterhub": _object(
            {
                "singleuser": _object(
                    {
                        "image": _IMAGE,
                        "extraEnv": {"type": ["object", "array"]},
                        "cpu": _object({"guarantee": _QUANTITY, "limit": _QUANTITY}, closed=True),
                        "memory": _object({"guarantee": _QUANTITY, "limit": _QUANTITY}, closed=True),
                        "defaultUrl": {"type": "string"},
                    },
                    required=("image",),
                )
            },
            required=("singleuser",),
        ),
        "dask-gateway": _object(
            {
                "gateway": _object(
                    {
                        "extraConfig": {"type": ["object", "string"], "additionalProperties": {"type": "string"}},
                        "backend": _object(
                            {
                                "image": _IMAGE,
                                "environment": {"type": "object", "additionalProperties": {"type": "string"}},
                                "scheduler": _GATEWAY_POD,
                                "worker": _GATEWAY_POD,
                            },
                            required=("image",),
                            closed=True,
                        ),
                    },
                    required=("backend",),
                )
            },
            required=("gateway",),
        ),
    },
    required=("jupyterhub", "dask-gateway"),
)


def daskhub_problems(values: dict, secrets: dict[str, dict]) -> list[str]:
    """Problems of the daskhub values: structure, our image at both places, Gateway commands, Secrets.

    Raises ``ManifestError`` when a pod or container fragment is not valid Kubernetes.
    """
    try:
        jsonschema.Draft202012Validator(VALUES_SCHEMA).validate(values)
    except jsonschema.ValidationError as exc:
        return [f"{'.'.join(map(str, exc.absolute_path))}: {exc.message}"]
    problems = []
    singleuser = values["jupyterhub"]["singleuser"]
    gateway = values["dask-gateway"]["gateway"]
    backend = gateway["backend"]
    for where, image in (("singleuser", singleuser["image"]), ("gateway backend", backend["image"])):
        if not IMAGE.match(f"{image['name']}:{image['tag']}"):
            problems.append(f"{where} image {image['name']}:{image['tag']} is not biasdask:{VERSION}")
    # Gateway scheduler/worker commands, as the chart appends extraConfig to the gateway's config.
    blocks = gateway.get("extraConfig", {})
    config = _TraitletsConfig()
    for key, code in [("extraConfig", blocks)] if isinstance(blocks, str) else sorted(blocks.items()):
        exec(compile(code, f"daskhub-values.yaml:{key}", "exec"), {"c": config})  # noqa: S102 - our own file
    cluster_config = config.values.get("KubeClusterConfig", {})
    for trait, sub in (("scheduler_cmd", "scheduler"), ("worker_cmd", "worker")):
        command = cluster_config.get(trait, [])  # a traitlets Command: a list, or a string to split
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        problems += _dask_command_problems(argv, sub, f"gateway {trait}")
    idle = cluster_config.get("idle_timeout", 0)
    if not (isinstance(idle, (int, float)) and idle > 0):
        problems.append(f"gateway idle_timeout {idle!r}: a killed run's cluster would never shut down")
    # The pod and container fragments the controller merges into the scheduler and worker pods.
    image = f"{backend['image']['name']}:{backend['image']['tag']}"
    for role in ("scheduler", "worker"):
        part = backend.get(role, {})
        container = {"name": f"dask-{role}", "image": image, **part.get("extraContainerConfig", {})}
        pod = {"containers": [container], **part.get("extraPodConfig", {})}
        validate_builtin({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"gateway-{role}"}, "spec": pod})
        problems += pod_problems(pod, {}, secrets, f"gateway {role}")
    # Single-user environment: zero-to-jupyterhub's mapping notation, as EnvVar entries.
    extra_env = singleuser.get("extraEnv", {})
    env = [{"name": name, **({"value": spec} if isinstance(spec, str) else spec)} for name, spec in extra_env.items()]
    notebook_image = f"{singleuser['image']['name']}:{singleuser['image']['tag']}"
    session = {"containers": [{"name": "notebook", "image": notebook_image, "env": env}]}
    validate_builtin({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "jupyter"}, "spec": session})
    problems += pod_problems(session, {}, secrets, "singleuser")
    return problems


def _pod_specs(node: Any) -> list[dict]:
    """Every pod spec (a mapping with ``containers``) nested in a manifest."""
    if isinstance(node, dict):
        found = [node] if isinstance(node.get("containers"), list) else []
        return found + [pod for value in node.values() for pod in _pod_specs(value)]
    if isinstance(node, list):
        return [pod for value in node for pod in _pod_specs(value)]
    return []


def _values() -> dict:
    return yaml.load(DASKHUB_VALUES.read_text(encoding="utf-8"), Loader=_Loader)


def test_daskhub_values():
    values = _values()
    assert daskhub_problems(values, _references()[1]) == []
    images = {
        f"{i['name']}:{i['tag']}"
        for i in (values["jupyterhub"]["singleuser"]["image"], values["dask-gateway"]["gateway"]["backend"]["image"])
    }
    manifest_images = {
        container["image"] for doc in _all_documents() for pod in _pod_specs(doc) for container in pod["containers"]
    }
    assert images == manifest_images, "the hub, the Gateway clusters and the jobs must run the same image"


_BACKEND = ("dask-gateway", "gateway", "backend")
_EXTRA_CONFIG = ("dask-gateway", "gateway", "extraConfig")
_OLD_GATEWAY_COMMANDS = """
c.KubeClusterConfig.scheduler_cmd = ["dask", "scheduler"]
c.KubeClusterConfig.worker_cmd = "dask-worker"
"""
_SECRET_KEY = ("jupyterhub", "singleuser", "extraEnv", "AWS_ACCESS_KEY_ID", "valueFrom", "secretKeyRef", "key")
_WORKER_SECRET = (*_BACKEND, "worker", "extraContainerConfig", "envFrom", 0, "secretRef", "name")


@pytest.mark.parametrize(
    ("mutation", "expected"),
    [
        (dict(path=(*_BACKEND, "image", "tag"), value=0.1), "0.1 is not of type 'string'"),
        (dict(path=("jupyterhub", "singleuser", "image", "name"), value="pangeo/base-notebook"), "singleuser image"),
        (dict(path=(*_BACKEND, "image", "tag"), value="latest"), "gateway backend image"),
        (dict(path=(*_BACKEND, "worker", "threads"), value="1"), "'1' is not of type 'integer', 'null'"),
        (dict(path=(*_BACKEND, "imageName"), value="biasdask"), "'imageName' was unexpected"),
        (dict(path=(*_EXTRA_CONFIG, "biasdask-dask-cli"), value=_OLD_GATEWAY_COMMANDS), "gateway worker_cmd"),
        (dict(path=(*_EXTRA_CONFIG, "biasdask-dask-cli"), delete=True), "gateway scheduler_cmd"),
        (dict(path=(*_EXTRA_CONFIG, "biasdask-idle-timeout"), delete=True), "gateway idle_timeout"),
        (dict(path=_WORKER_SECRET, value="s3"), "envFrom Secret s3"),
        (dict(path=_SECRET_KEY, value="KEY"), "biasdask-s3-credentials/KEY"),
    ],
)
def test_broken_daskhub_values_are_detected(mutation, expected):
    problems = daskhub_problems(_mutate(_values(), **mutation), _references()[1])
    assert any(expected in p for p in problems), problems


def test_broken_gateway_container_fragment_fails_validation():
    broken = _mutate(_values(), (*_BACKEND, "worker", "extraContainerConfig", "envFrom"), {"secretRef": {"name": "x"}})
    with pytest.raises(ManifestError, match="containers/0/envFrom: .* is not of type 'array'"):
        daskhub_problems(broken, _references()[1])


@pytest.mark.slow
def test_dockerfile_fills_a_numba_cache_that_another_uid_loads_without_compiling():
    """The image's cache step, run as the Dockerfile runs it (its NUMBA_CACHE_DIR, its RUN line), leaves
    every kernel in the cache; a process of another uid (JupyterHub's 1000, when this runs as root)
    then loads them all from it and compiles nothing (NUMBA_DEBUG_CACHE).

    The cache starts from what this checkout's own numba cache holds (filled first by loading every
    kernel here, as the session's other tests do anyway), so the step only compiles what that copy lacks
    instead of ~20 CPU-seconds of numba that the rest of the suite already paid."""
    import os
    import shutil
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    instructions = dockerfile_instructions(DOCKERFILE.read_text(encoding="utf-8"))
    env_lines = " ".join(rest for keyword, rest in instructions if keyword == "ENV")
    cache_dir = re.search(r"NUMBA_CACHE_DIR=(\S+)", env_lines)
    assert cache_dir and not cache_dir[1].startswith(("/tmp", "/usr", "/opt/conda")), env_lines
    (warm,) = [rest for keyword, rest in instructions if keyword == "RUN" and "warm_kernels" in rest]
    assert "chmod -R a+rwX" in warm
    base = Path(tempfile.mkdtemp())  # not pytest's tmp_path: its parent is private to this uid
    try:
        base.chmod(0o755)
        cache = base / "numba-cache"
        _seed_numba_cache(cache)
        env = {
            **os.environ,
            "NUMBA_CACHE_DIR": str(cache),
            "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
            "PYTHONPATH": str(ROOT),
            "HOME": str(base),
        }
        subprocess.run(["bash", "-c", warm], env=env, check=True, timeout=600, capture_output=True)
        assert any(cache.rglob("*.nbc"))

        user = ["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups"] if os.geteuid() == 0 else []
        check = "from biasdask.engine.cluster import warm_kernels; warm_kernels()"
        out = subprocess.run(
            [*user, sys.executable, "-c", check],
            env={**env, "NUMBA_DEBUG_CACHE": "1"},
            check=True,
            timeout=600,
            capture_output=True,
            text=True,
        )
        assert out.stdout.count("data loaded from") >= 10, out.stdout[-2000:]
        assert "data saved to" not in out.stdout, out.stdout[-2000:]
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _seed_numba_cache(cache: Path) -> None:
    """Copy the kernels of this checkout's numba cache (``__pycache__`` next to the sources) to where numba
    looks for them under ``NUMBA_CACHE_DIR=cache``; an index only serves a source of the same stamp."""
    import shutil

    from numba.core.caching import _CacheLocator

    from biasdask.engine.cluster import warm_kernels

    warm_kernels()
    for index in (ROOT / "biasdask").rglob("__pycache__/*.nbi"):
        source = index.parent.parent / (index.name.split(".", 1)[0] + ".py")
        target = cache / _CacheLocator.get_suitable_cache_subpath(str(source))
        target.mkdir(parents=True, exist_ok=True)
        for f in index.parent.glob(index.name.rsplit(".", 2)[0] + ".*.nb[ic]"):
            shutil.copy2(f, target / f.name)
