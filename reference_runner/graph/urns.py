"""The URNs the front end understands, in one place."""

from apache_beam.portability import python_urns

IMPULSE = "beam:transform:impulse:v1"
PAR_DO = "beam:transform:pardo:v1"
GROUP_BY_KEY = "beam:transform:group_by_key:v1"
FLATTEN = "beam:transform:flatten:v1"
WINDOW_INTO = "beam:transform:window_into:v1"
ASSIGN_WINDOWS = "beam:transform:assign_windows:v1"  # older name of WINDOW_INTO
COMBINE_PER_KEY = "beam:transform:combine_per_key:v1"
TEST_STREAM = "beam:transform:teststream:v1"
MERGE_WINDOWS = "beam:transform:merge_windows:v1"
MAP_WINDOWS = "beam:transform:map_windows:v1"  # the SDK maps main windows to a side input's
# A stage the SDK fused itself (pre_optimize=all), expanded again by graph/unfuse.py
EXECUTABLE_STAGE = "beam:runner:executable_stage:v1"
# What the SDK's pre-optimization puts before a Flatten input whose coder differs from the
# output's (and graph/transcode.py does too): the SDK re-encodes the elements.
IDENTITY_DOFN = "beam:dofn:identity:0.1"
# A one-input Flatten an SDK other than Python's runs inside a bundle, where the runner cannot
# re-encode an input itself (graph/transcode.py): its output leaves the bundle with its own
# PCollection's coder. The SDK sees FLATTEN's URN (graph/descriptors.py); the runner's own
# Flattens keep theirs.
SDK_FLATTEN = "reference:transform:sdk_flatten:v1"
# Splittable DoFn parts (graph/sdf.py expands a splittable ParDo into them)
SDF_PAIR_WITH_RESTRICTION = "beam:transform:sdf_pair_with_restriction:v1"
SDF_SPLIT_AND_SIZE = "beam:transform:sdf_split_and_size_restrictions:v1"
SDF_PROCESS_SIZED = "beam:transform:sdf_process_sized_element_and_restrictions:v1"
SDF_PARTS = {SDF_PAIR_WITH_RESTRICTION, SDF_SPLIT_AND_SIZE, SDF_PROCESS_SIZED}
# Drain: residual restrictions -> finite ones (run outside the graph, see sdf.truncation_stage)
SDF_TRUNCATE_SIZED = "beam:transform:sdf_truncate_sized_restrictions:v1"
# Transforms whose payload is a ParDoPayload
PARDO_LIKE = {PAR_DO} | SDF_PARTS
# Transforms that always start a stage, so the runner feeds (and can reschedule) their input
STAGE_ROOTS = {SDF_PROCESS_SIZED}
# Combiner lifting (graph/lifting.py)
COMBINE_PRECOMBINE = "beam:transform:combine_per_key_precombine:v1"
COMBINE_MERGE_ACCUMULATORS = "beam:transform:combine_per_key_merge_accumulators:v1"
COMBINE_EXTRACT_OUTPUTS = "beam:transform:combine_per_key_extract_outputs:v1"
# Transforms the SDK harness executes inside a fused stage.
SDK_TRANSFORMS = {
    PAR_DO,
    WINDOW_INTO,
    ASSIGN_WINDOWS,
    *SDF_PARTS,
    COMBINE_PRECOMBINE,
    COMBINE_MERGE_ACCUMULATORS,
    COMBINE_EXTRACT_OUTPUTS,
    "beam:transform:combine_grouped_values:v1",
    "beam:transform:combine_globally:v1",
    "beam:transform:to_string:v1",
    IDENTITY_DOFN,
    SDK_FLATTEN,
}
# Runner-internal (added by graph/lifting.py): KV(K, V) <-> KV(K's encoding as bytes, V),
# executed by the runner like a one-input Flatten that re-encodes its elements.
KEYS_TO_BYTES = "reference:transform:keys_to_bytes:v1"
KEYS_FROM_BYTES = "reference:transform:keys_from_bytes:v1"
# A composite the runner may run itself (graph/reshuffle.py): elements pass unchanged
RESHUFFLE = "beam:transform:reshuffle:v1"
RUNNER_TRANSFORMS = {IMPULSE, GROUP_BY_KEY, FLATTEN, KEYS_TO_BYTES, KEYS_FROM_BYTES, RESHUFFLE}

DATA_INPUT = "beam:runner:source:v1"
DATA_OUTPUT = "beam:runner:sink:v1"

# Windowing
GLOBAL_WINDOWS = "beam:window_fn:global_windows:v1"
FIXED_WINDOWS = "beam:window_fn:fixed_windows:v1"
SLIDING_WINDOWS = "beam:window_fn:sliding_windows:v1"
SESSION_WINDOWS = "beam:window_fn:session_windows:v1"
PICKLED_PYTHON_WINDOW_FN = "beam:window_fn:pickled_python:v1"
PICKLED_PYTHON_CODER = "beam:coder:pickled_python:v1"

# Coders
WINDOWED_VALUE_CODER = "beam:coder:windowed_value:v1"
LENGTH_PREFIX_CODER = "beam:coder:length_prefix:v1"
KV_CODER = "beam:coder:kv:v1"
ITERABLE_CODER = "beam:coder:iterable:v1"
BYTES_CODER = "beam:coder:bytes:v1"
DOUBLE_CODER = "beam:coder:double:v1"
STRING_UTF8_CODER = "beam:coder:string_utf8:v1"
VARINT_CODER = "beam:coder:varint:v1"
BOOL_CODER = "beam:coder:bool:v1"
GLOBAL_WINDOW_CODER = "beam:coder:global_window:v1"
INTERVAL_WINDOW_CODER = "beam:coder:interval_window:v1"
TIMER_CODER = "beam:coder:timer:v1"
# A Go user type's coder (opaque to the runner): the Go SDK writes a varint length before its bytes
GO_CUSTOM_CODER = "beam:go:coder:custom:v1"
# A window the runner does not know: its max timestamp, then its encoding length-prefixed
CUSTOM_WINDOW_CODER = "beam:coder:custom_window:v1"
# Coders the runner reads: these leaves, and these structures over readable components.
READABLE_LEAF_CODERS = {
    BYTES_CODER,
    STRING_UTF8_CODER,
    VARINT_CODER,
    BOOL_CODER,
    DOUBLE_CODER,
    GLOBAL_WINDOW_CODER,
    INTERVAL_WINDOW_CODER,
}
STRUCTURED_CODERS = {KV_CODER, ITERABLE_CODER, WINDOWED_VALUE_CODER, TIMER_CODER}
WINDOW_CODERS = {GLOBAL_WINDOW_CODER, INTERVAL_WINDOW_CODER, CUSTOM_WINDOW_CODER}

# Side inputs
ITERABLE_SIDE_INPUT = "beam:side_input:iterable:v1"
MULTIMAP_SIDE_INPUT = "beam:side_input:multimap:v1"

# How an SDK reaches user state over the Fn API (StateSpec.protocol)
BAG_USER_STATE = "beam:user_state:bag:v1"
MULTIMAP_USER_STATE = "beam:user_state:multimap:v1"
ORDERED_LIST_USER_STATE = "beam:user_state:ordered_list:v1"

# Requirements the reference runner meets (others are rejected up front).
REQUIRES_STATEFUL_PROCESSING = "beam:requirement:pardo:stateful:v1"
REQUIRES_TIME_SORTED_INPUT = "beam:requirement:pardo:time_sorted_input:v1"
REQUIRES_ON_WINDOW_EXPIRATION = "beam:requirement:pardo:on_window_expiration:v1"
SUPPORTED_REQUIREMENTS: set[str] = {
    REQUIRES_STATEFUL_PROCESSING,
    REQUIRES_TIME_SORTED_INPUT,
    REQUIRES_ON_WINDOW_EXPIRATION,
    "beam:requirement:pardo:splittable_dofn:v1",
    "beam:requirement:pardo:finalization:v1",
}

# An environment's capability naming its SDK and release (beam:version:sdk_base:IMAGE)
SDK_BASE_CAPABILITY = "beam:version:sdk_base:"
# Transforms whose payload is a CombinePayload carrying the user's CombineFn
COMBINE_TRANSFORMS = {
    COMBINE_PER_KEY,
    COMBINE_PRECOMBINE,
    COMBINE_MERGE_ACCUMULATORS,
    COMBINE_EXTRACT_OUTPUTS,
    "beam:transform:combine_grouped_values:v1",
    "beam:transform:combine_globally:v1",
}
# The user functions an embedded Python SDK harness runs: every DoFn and CombineFn form of the Python SDK
PYTHON_USER_FUNCTIONS = {
    python_urns.PICKLED_DOFN,
    python_urns.PICKLED_DOFN_INFO,
    python_urns.KEY_WITH_NONE_DOFN,
    python_urns.PICKLED_COMBINE_FN,
    python_urns.PACKED_COMBINE_FN,
}

# Environments the embedded worker can serve: every Python environment runs in process.
EMBEDDABLE_ENVIRONMENTS = {
    "beam:env:embedded_python:v1",
    "beam:env:loopback:v1",
    "beam:env:external:v1",
    "beam:env:docker:v1",
    "beam:env:process:v1",
    "beam:env:default:v1",
    "",
}
