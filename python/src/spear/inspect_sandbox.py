"""`spear.inspect_sandbox`: an Inspect AI sandbox environment provider, `sandbox="spear"`.

Installed with the package, it is registered through Inspect's plugin entry point (`inspect_ai`),
so a task names it like Docker's:

```python
from inspect_ai import Task
from inspect_ai.util import SandboxEnvironmentSpec
from spear.inspect_sandbox import SpearSandboxConfig

Task(..., sandbox="spear")                                   # a node on the current directory
Task(..., sandbox=SandboxEnvironmentSpec("spear", SpearSandboxConfig(template="/srv/templates/repo")))
```

Each sample gets a spear session of its own (on a copy of its own of the template, when one is
configured); the task's node is started at `task_init` (or a running one is used: `url` and
`token`) and stopped at `task_cleanup`. `exec`, `read_file` and `write_file` go through the
session's tools, so every command is classified, confined, limited and audited by spear:

- `exec(cmd)` runs `cmd` (an argv, quoted for bash) with `cwd`, `env` (exported first) and
  `input` (piped in, as base64 so that any bytes pass); a command spear refuses returns exit
  status 126 with spear's reason on stderr; one past its `timeout` raises `TimeoutError`;
  another `user` than the node's own (commands run as it) raises `SandboxUserUnsupportedError`.
- `read_file` returns the file's exact bytes (read in the sandbox as base64); a missing file
  raises `FileNotFoundError`, a directory `IsADirectoryError`.
- `write_file` writes text with spear's `write_file` tool and bytes through the sandbox; a path
  spear refuses raises `PermissionError` with its reason.
"""

from __future__ import annotations

import base64
import os
import pwd
import shlex
from typing import Any, ClassVar, Literal, overload

import anyio
from inspect_ai.util import (
    ExecResult,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxUserUnsupportedError,
    sandboxenv,
)
from pydantic import BaseModel

from ._node import Mode, Node
from ._results import Result, Status
from ._session import Session


class SpearSandboxConfig(BaseModel, frozen=True):
    """The provider's configuration."""

    template: str | None = None
    """A template directory: each sample works in a copy of its own."""
    workspace: str | None = None
    """The node's workspace (default: the current directory)."""
    mode: Mode = "auto"
    """What a node the provider starts allows."""
    no_network: bool = False
    url: str | None = None
    """A running node to use instead of starting one."""
    token: str | None = None
    """Its token (default: `$SPEAR_TOKEN`)."""
    spear: str | None = None
    """The spear binary (default: `$SPEAR_BIN`, else on PATH)."""
    node_args: tuple[str, ...] = ()
    timeout: int = 180
    """A command's time when `exec` gives none."""


def _config(config: SandboxEnvironmentConfigType | None) -> SpearSandboxConfig:
    if config is None:
        return SpearSandboxConfig()
    if isinstance(config, SpearSandboxConfig):
        return config
    if isinstance(config, BaseModel):
        return SpearSandboxConfig(**config.model_dump())
    raise ValueError(f"sandbox 'spear' takes a SpearSandboxConfig, not {config!r}")


@sandboxenv(name="spear")
class SpearSandboxEnvironment(SandboxEnvironment):
    """One sample's spear session."""

    _nodes: ClassVar[dict[SpearSandboxConfig, Node]] = {}
    """The node of each configuration, from its task's start to its end."""

    def __init__(self, session: Session, config: SpearSandboxConfig) -> None:
        super().__init__()
        self.session = session
        self._config = config

    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> BaseModel:
        return SpearSandboxConfig(**config)

    @classmethod
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        await cls._node(_config(config))

    @classmethod
    async def task_cleanup(cls, task_name: str, config: SandboxEnvironmentConfigType | None, cleanup: bool) -> None:
        node = cls._nodes.pop(_config(config), None)
        if node is not None:
            await anyio.to_thread.run_sync(node.stop)

    @classmethod
    async def sample_init(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, metadata: dict[str, str]
    ) -> dict[str, SandboxEnvironment]:
        settings = _config(config)
        node = await cls._node(settings)
        session = await anyio.to_thread.run_sync(lambda: Session(node, template=settings.template))
        return {"default": cls(session, settings)}

    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        for environment in environments.values():
            await anyio.to_thread.run_sync(environment.as_type(SpearSandboxEnvironment).session.close)

    @classmethod
    async def _node(cls, config: SpearSandboxConfig) -> Node:
        node = cls._nodes.get(config)
        if node is None:
            if config.url is not None:
                node = Node.attach(config.url, config.token)
            else:
                node = await anyio.to_thread.run_sync(
                    lambda: Node(
                        config.workspace,
                        templates=[config.template] if config.template else [],
                        mode=config.mode,
                        no_network=config.no_network,
                        args=config.node_args,
                        spear=config.spear,
                    )
                )
            cls._nodes[config] = node
        return node

    async def exec(
        self,
        cmd: list[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
        timeout: int | None = None,
        timeout_retry: bool = True,
        concurrency: bool = True,
    ) -> ExecResult[str]:
        if user is not None and user not in _sandbox_user():
            raise SandboxUserUnsupportedError(
                f"spear runs every command as the node's own user ({' or '.join(_sandbox_user())}), not {user!r}"
            )
        script = shlex.join(cmd)
        if input is not None:
            data = input.encode() if isinstance(input, str) else input
            script = f"printf %s {base64.b64encode(data).decode()} | base64 -d | {script}"
        if env:
            exports = " ".join(f"{name}={shlex.quote(value)}" for name, value in env.items())
            script = f"export {exports}\n{script}"
        seconds = timeout or self._config.timeout
        result = await self._run(script, seconds, cwd)
        if result.status is Status.TIMEOUT:
            raise TimeoutError(f"the command ran past {seconds} s and was killed with its whole tree")
        if result.exit_code is None:
            # Refused (126), not found (127), or the sandbox failed (125): as `spear exec` says.
            return ExecResult(False, result.exit_status, result.stdout, _why(result))
        return ExecResult(result.exit_code == 0, result.exit_code, result.stdout, result.stderr)

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        quoted = shlex.quote(file)
        result = await self._run(
            f"if [ -d {quoted} ]; then echo directory >&2; exit 21; fi; base64 -w0 -- {quoted}", 60, None
        )
        if result.exit_code == 21:
            raise IsADirectoryError(file)
        if result.exit_code is None:
            raise PermissionError(f"{file}: {_why(result)}")
        if result.exit_code != 0:
            if "No such file" in result.stderr:
                raise FileNotFoundError(file)
            raise PermissionError(f"{file}: {result.stderr.strip()}")
        data = base64.b64decode(result.stdout)
        return data.decode("utf-8") if text else data

    async def write_file(self, file: str, contents: str | bytes) -> None:
        if isinstance(contents, str):
            result = await anyio.to_thread.run_sync(self.session.write_file, file, contents)
        else:
            quoted = shlex.quote(file)
            encoded = base64.b64encode(contents).decode()
            result = await self._run(
                f'mkdir -p -- "$(dirname -- {quoted})" && printf %s {encoded} | base64 -d > {quoted}', 60, None
            )
        if result.exit_code == 0 and result.ok:
            return
        if "Is a directory" in result.stderr or "is a directory" in (result.reason or ""):
            raise IsADirectoryError(file)
        raise PermissionError(f"{file}: {_why(result)}")

    async def _run(self, script: str, timeout: int, cwd: str | None) -> Result:
        return await anyio.to_thread.run_sync(lambda: self.session.run(script, timeout=timeout, workdir=cwd))


def _sandbox_user() -> tuple[str, ...]:
    """The names of the one user commands run as: the node's (this process's) uid and name."""
    uid = os.geteuid()
    try:
        return (pwd.getpwuid(uid).pw_name, str(uid))
    except KeyError:
        return (str(uid),)


def _why(result: Result) -> str:
    """What a result says of why it did not happen."""
    return (result.reason or result.stderr or result.status.value).strip()
