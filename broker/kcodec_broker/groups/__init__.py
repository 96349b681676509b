"""Consumer groups: the coordinator's placement, the classic protocol's groups and committed offsets."""

from .coordinator import GroupCoordinator, GroupSettings
from .group import GroupState
from .offsets import Committed, CommittedOffsets

__all__ = ["Committed", "CommittedOffsets", "GroupCoordinator", "GroupSettings", "GroupState"]
