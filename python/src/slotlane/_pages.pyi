# The C helper that builds a scan page's keys (src/slotlane/_pages.c).
from typing import Any, List, Optional

def page_keys(records: Any, data: Any, encoding: Optional[str] = ..., errors: Optional[str] = ...) -> List[Any]: ...
