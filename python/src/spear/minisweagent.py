"""`spear.minisweagent`: mini-swe-agent's commands run in a spear session.

Name the class in mini-swe-agent's configuration, and every command its agent runs goes through
spear (classified, confined, limited, audited), in a session of its own, on a template per
instance if you like:

```yaml
environment:
  environment_class: spear.minisweagent.SpearEnvironment
  template: /srv/templates/{{instance_id}}   # or: workspace: /srv/repo
  mode: auto
  timeout: 120
  # url: https://node.example:8443  and  token: ...  to use a running node (else one is started)
```

A command spear refuses comes back as the agent's observation with its reason and exit status 126
(spear's for "denied"; 125 where the sandbox failed, 127 where nothing was found), so the model
reads why; a command that runs out of time is reported as mini-swe-agent reports a timeout.
`COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` as the first line of a command's output submits, as in
mini-swe-agent's own environments.
"""

from __future__ import annotations

import platform
import shlex
from typing import Any

from minisweagent.exceptions import Submitted
from minisweagent.utils.serialize import recursive_merge
from pydantic import BaseModel

from ._node import Mode, Node
from ._results import Status
from ._session import Session

SUBMIT_MARKER = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


class SpearEnvironmentConfig(BaseModel):
    """The environment's configuration (mini-swe-agent's `environment:` section)."""

    template: str | None = None
    """A template directory: the session works in a copy of its own (one per instance)."""
    workspace: str | None = None
    """Without a template: the directory the session works in (default: the current one)."""
    cwd: str = ""
    """Where commands run, relative to the workspace (default: its root)."""
    env: dict[str, str] = {}
    """Variables every command gets (exported at its start)."""
    timeout: int = 60
    """A command's time, in seconds; the node kills its whole tree after it."""
    mode: Mode = "auto"
    """What a node this environment starts allows."""
    url: str | None = None
    """A running node's URL; none: the environment starts one for itself."""
    token: str | None = None
    """The running node's token (default: `$SPEAR_TOKEN`)."""
    spear: str | None = None
    """The spear binary for a node it starts (default: `$SPEAR_BIN`, else on PATH)."""
    node_args: list[str] = []
    """More flags for a node it starts."""


class SpearEnvironment:
    """mini-swe-agent's `Environment`, over a spear session."""

    def __init__(self, *, config_class: type[SpearEnvironmentConfig] = SpearEnvironmentConfig, **kwargs: Any) -> None:
        self.config = config_class(**kwargs)
        config = self.config
        self._own_node: Node | None = None
        if config.url is not None:
            node = Node.attach(config.url, config.token)
        else:
            templates = [config.template] if config.template else []
            node = self._own_node = Node(
                config.workspace, templates=templates, mode=config.mode, spear=config.spear, args=config.node_args
            )
        try:
            self.session = Session(node, template=config.template)
        except BaseException:
            self.cleanup()
            raise

    def execute(self, action: dict[str, Any], cwd: str = "", *, timeout: int | None = None) -> dict[str, Any]:
        """Runs the action's command in the session: mini-swe-agent's observation dict."""
        command = str(action.get("command", ""))
        if self.config.env:
            exports = " ".join(f"{name}={shlex.quote(value)}" for name, value in self.config.env.items())
            command = f"export {exports}\n{command}"
        seconds = timeout or self.config.timeout
        result = self.session.run(command, timeout=seconds, workdir=(cwd or self.config.cwd) or None)
        output: dict[str, Any]
        if result.status is Status.TIMEOUT:
            output = {
                "output": result.output,
                "returncode": -1,
                "exception_info": f"An error occurred while executing the command: timed out after {seconds} s",
                "extra": {"exception_type": "TimeoutExpired", "exception": result.reason or "timeout"},
            }
        elif result.refused or result.exit_code is None:
            output = {
                "output": f"{result.output}{result.reason or result.status.value}\n",
                "returncode": result.exit_status,
                "exception_info": "",
                "extra": {"spear_status": result.status.value, "spear_rule": result.rule},
            }
        else:
            output = {"output": result.output, "returncode": result.exit_code, "exception_info": ""}
        self._check_finished(output)
        return output

    def _check_finished(self, output: dict[str, Any]) -> None:
        lines = output.get("output", "").lstrip().splitlines(keepends=True)
        if lines and lines[0].strip() == SUBMIT_MARKER and output["returncode"] == 0:
            submission = "".join(lines[1:])
            raise Submitted(
                {
                    "role": "exit",
                    "content": submission,
                    "extra": {"exit_status": "Submitted", "submission": submission},
                }
            )

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        merged: dict[str, Any] = recursive_merge(self.config.model_dump(), platform.uname()._asdict(), kwargs)
        return merged

    def serialize(self) -> dict[str, Any]:
        return {
            "info": {
                "config": {
                    "environment": self.config.model_dump(mode="json", exclude={"token"}),
                    "environment_type": f"{self.__class__.__module__}.{self.__class__.__name__}",
                }
            }
        }

    def diff(self) -> str:
        """The session's changes to its template, as a patch (a template session only)."""
        return self.session.diff()

    def cleanup(self) -> None:
        """Ends the session, and a node the environment started."""
        session = getattr(self, "session", None)
        if session is not None:
            session.close()
        node = getattr(self, "_own_node", None)
        if node is not None:
            node.stop()
            self._own_node = None

    def __del__(self) -> None:
        self.cleanup()
