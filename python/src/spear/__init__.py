"""spear from Python: a node (`spear mcp --listen`) and sessions on it.

```python
import spear

with spear.Node("/srv/repo", templates=["/srv/templates/repo"], mode="auto") as node:
    with spear.Session(node, template="repo") as s:
        r = s.run("pytest -q", timeout=300)
        print(r.status, r.exit_code, r.output, r.changed_paths)
        print(s.diff())
```

Every call returns a `Result`; a refusal is a result (`r.refused`, `r.rule`, `r.reason`). An
exception (`SpearError` and its kinds) means the call did not reach the session or did not come
back.
"""

from ._errors import NodeError, ProtocolError, SessionLost, SessionRefused, SpearError, TransportError
from ._node import Mode, Node, find_spear
from ._results import Action, Guarantees, Job, Result, Status
from ._session import AsyncSession, Session

__all__ = [
    "Action",
    "AsyncSession",
    "Guarantees",
    "Job",
    "Mode",
    "Node",
    "NodeError",
    "ProtocolError",
    "Result",
    "Session",
    "SessionLost",
    "SessionRefused",
    "SpearError",
    "Status",
    "TransportError",
    "find_spear",
]

__version__ = "0.1.0"
