"""The fabric planner: fat-tree / rail-optimized generation, MPO-24 trunks, plan checks, BOM.

Pure functions over the model; only `cli/plan.py` reads or writes files. See docs/planner.md.
"""

from .bom import Bom, BomLine, bill_of_materials
from .checks import PlanFinding, PlanReport, check_plan
from .compare import OPTIONS, Compared, Option, compare, parse_option
from .design import Design, SwitchType, resolve
from .emit import GENERATED_FILE, generated_yaml
from .errors import PlanError
from .generate import plan_fabric
from .merge import Deviation, Merged, apply_plan, merge_plan
from .prices import EXAMPLE_PRICES
from .result import Plan
from .sizing import Planned, SizeRequest, size, size_dict

__all__ = [
    "EXAMPLE_PRICES", "GENERATED_FILE", "OPTIONS", "Bom", "BomLine", "Compared", "Design", "Deviation",
    "Merged", "Option", "Plan", "PlanError", "PlanFinding", "PlanReport", "Planned", "SizeRequest",
    "SwitchType", "apply_plan", "bill_of_materials", "check_plan", "compare", "generated_yaml",
    "merge_plan", "parse_option", "plan_fabric", "resolve", "size", "size_dict",
]
