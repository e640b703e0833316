from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AgentCost(_message.Message):
    __slots__ = ["bpf_run_count", "bpf_run_time_ns", "bpf_stats", "cpu_system_s", "cpu_user_s", "rss_bytes"]
    BPF_RUN_COUNT_FIELD_NUMBER: _ClassVar[int]
    BPF_RUN_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    BPF_STATS_FIELD_NUMBER: _ClassVar[int]
    CPU_SYSTEM_S_FIELD_NUMBER: _ClassVar[int]
    CPU_USER_S_FIELD_NUMBER: _ClassVar[int]
    RSS_BYTES_FIELD_NUMBER: _ClassVar[int]
    bpf_run_count: int
    bpf_run_time_ns: int
    bpf_stats: bool
    cpu_system_s: float
    cpu_user_s: float
    rss_bytes: int
    def __init__(self, bpf_run_time_ns: _Optional[int] = ..., bpf_run_count: _Optional[int] = ..., bpf_stats: bool = ..., cpu_user_s: _Optional[float] = ..., cpu_system_s: _Optional[float] = ..., rss_bytes: _Optional[int] = ...) -> None: ...

class DeviceInfo(_message.Message):
    __slots__ = ["disks", "dm_name", "holders", "major", "minor", "model", "name", "osd_id", "osd_role", "partition", "present", "rotational", "settings", "slaves"]
    DISKS_FIELD_NUMBER: _ClassVar[int]
    DM_NAME_FIELD_NUMBER: _ClassVar[int]
    HOLDERS_FIELD_NUMBER: _ClassVar[int]
    MAJOR_FIELD_NUMBER: _ClassVar[int]
    MINOR_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OSD_ID_FIELD_NUMBER: _ClassVar[int]
    OSD_ROLE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    PRESENT_FIELD_NUMBER: _ClassVar[int]
    ROTATIONAL_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    SLAVES_FIELD_NUMBER: _ClassVar[int]
    disks: _containers.RepeatedScalarFieldContainer[str]
    dm_name: str
    holders: _containers.RepeatedScalarFieldContainer[str]
    major: int
    minor: int
    model: str
    name: str
    osd_id: int
    osd_role: str
    partition: bool
    present: bool
    rotational: bool
    settings: DeviceSettings
    slaves: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., major: _Optional[int] = ..., minor: _Optional[int] = ..., model: _Optional[str] = ..., rotational: bool = ..., dm_name: _Optional[str] = ..., slaves: _Optional[_Iterable[str]] = ..., osd_id: _Optional[int] = ..., osd_role: _Optional[str] = ..., partition: bool = ..., present: bool = ..., holders: _Optional[_Iterable[str]] = ..., disks: _Optional[_Iterable[str]] = ..., settings: _Optional[_Union[DeviceSettings, _Mapping]] = ...) -> None: ...

class DeviceSettings(_message.Message):
    __slots__ = ["firmware", "iosched", "max_sectors_kb", "nomerges", "nr_requests", "queue_depth", "read_ahead_kb", "rotational", "scheduler", "schedulers", "wbt_lat_usec", "write_cache"]
    class IoschedEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    FIRMWARE_FIELD_NUMBER: _ClassVar[int]
    IOSCHED_FIELD_NUMBER: _ClassVar[int]
    MAX_SECTORS_KB_FIELD_NUMBER: _ClassVar[int]
    NOMERGES_FIELD_NUMBER: _ClassVar[int]
    NR_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_DEPTH_FIELD_NUMBER: _ClassVar[int]
    READ_AHEAD_KB_FIELD_NUMBER: _ClassVar[int]
    ROTATIONAL_FIELD_NUMBER: _ClassVar[int]
    SCHEDULERS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULER_FIELD_NUMBER: _ClassVar[int]
    WBT_LAT_USEC_FIELD_NUMBER: _ClassVar[int]
    WRITE_CACHE_FIELD_NUMBER: _ClassVar[int]
    firmware: str
    iosched: _containers.ScalarMap[str, str]
    max_sectors_kb: int
    nomerges: int
    nr_requests: int
    queue_depth: int
    read_ahead_kb: int
    rotational: int
    scheduler: str
    schedulers: _containers.RepeatedScalarFieldContainer[str]
    wbt_lat_usec: int
    write_cache: str
    def __init__(self, scheduler: _Optional[str] = ..., schedulers: _Optional[_Iterable[str]] = ..., iosched: _Optional[_Mapping[str, str]] = ..., nr_requests: _Optional[int] = ..., queue_depth: _Optional[int] = ..., read_ahead_kb: _Optional[int] = ..., write_cache: _Optional[str] = ..., wbt_lat_usec: _Optional[int] = ..., max_sectors_kb: _Optional[int] = ..., nomerges: _Optional[int] = ..., rotational: _Optional[int] = ..., firmware: _Optional[str] = ...) -> None: ...

class DeviceStats(_message.Message):
    __slots__ = ["discard", "flush", "fua", "fua_latency_ns", "holders", "major", "minor", "name", "osd_id", "osd_role", "preflush", "preflush_latency_ns", "read", "requeues", "seek_backward", "seek_distance_sectors", "seek_forward", "seek_sequential", "write"]
    DISCARD_FIELD_NUMBER: _ClassVar[int]
    FLUSH_FIELD_NUMBER: _ClassVar[int]
    FUA_FIELD_NUMBER: _ClassVar[int]
    FUA_LATENCY_NS_FIELD_NUMBER: _ClassVar[int]
    HOLDERS_FIELD_NUMBER: _ClassVar[int]
    MAJOR_FIELD_NUMBER: _ClassVar[int]
    MINOR_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OSD_ID_FIELD_NUMBER: _ClassVar[int]
    OSD_ROLE_FIELD_NUMBER: _ClassVar[int]
    PREFLUSH_FIELD_NUMBER: _ClassVar[int]
    PREFLUSH_LATENCY_NS_FIELD_NUMBER: _ClassVar[int]
    READ_FIELD_NUMBER: _ClassVar[int]
    REQUEUES_FIELD_NUMBER: _ClassVar[int]
    SEEK_BACKWARD_FIELD_NUMBER: _ClassVar[int]
    SEEK_DISTANCE_SECTORS_FIELD_NUMBER: _ClassVar[int]
    SEEK_FORWARD_FIELD_NUMBER: _ClassVar[int]
    SEEK_SEQUENTIAL_FIELD_NUMBER: _ClassVar[int]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    discard: OpStats
    flush: OpStats
    fua: int
    fua_latency_ns: Histogram
    holders: _containers.RepeatedScalarFieldContainer[str]
    major: int
    minor: int
    name: str
    osd_id: int
    osd_role: str
    preflush: int
    preflush_latency_ns: Histogram
    read: OpStats
    requeues: int
    seek_backward: int
    seek_distance_sectors: Histogram
    seek_forward: int
    seek_sequential: int
    write: OpStats
    def __init__(self, name: _Optional[str] = ..., major: _Optional[int] = ..., minor: _Optional[int] = ..., read: _Optional[_Union[OpStats, _Mapping]] = ..., write: _Optional[_Union[OpStats, _Mapping]] = ..., flush: _Optional[_Union[OpStats, _Mapping]] = ..., discard: _Optional[_Union[OpStats, _Mapping]] = ..., seek_sequential: _Optional[int] = ..., seek_forward: _Optional[int] = ..., seek_backward: _Optional[int] = ..., seek_distance_sectors: _Optional[_Union[Histogram, _Mapping]] = ..., preflush: _Optional[int] = ..., fua: _Optional[int] = ..., preflush_latency_ns: _Optional[_Union[Histogram, _Mapping]] = ..., fua_latency_ns: _Optional[_Union[Histogram, _Mapping]] = ..., requeues: _Optional[int] = ..., osd_id: _Optional[int] = ..., osd_role: _Optional[str] = ..., holders: _Optional[_Iterable[str]] = ...) -> None: ...

class Drops(_message.Message):
    __slots__ = ["bio_evicted", "completed_at_accounting", "inflight_full", "no_bio_ts", "no_slot", "program_skips", "sync_evicted", "sync_full"]
    BIO_EVICTED_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_AT_ACCOUNTING_FIELD_NUMBER: _ClassVar[int]
    INFLIGHT_FULL_FIELD_NUMBER: _ClassVar[int]
    NO_BIO_TS_FIELD_NUMBER: _ClassVar[int]
    NO_SLOT_FIELD_NUMBER: _ClassVar[int]
    PROGRAM_SKIPS_FIELD_NUMBER: _ClassVar[int]
    SYNC_EVICTED_FIELD_NUMBER: _ClassVar[int]
    SYNC_FULL_FIELD_NUMBER: _ClassVar[int]
    bio_evicted: int
    completed_at_accounting: int
    inflight_full: int
    no_bio_ts: int
    no_slot: int
    program_skips: int
    sync_evicted: int
    sync_full: int
    def __init__(self, no_slot: _Optional[int] = ..., inflight_full: _Optional[int] = ..., sync_full: _Optional[int] = ..., sync_evicted: _Optional[int] = ..., no_bio_ts: _Optional[int] = ..., bio_evicted: _Optional[int] = ..., program_skips: _Optional[int] = ..., completed_at_accounting: _Optional[int] = ...) -> None: ...

class Histogram(_message.Message):
    __slots__ = ["count", "index", "precision"]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PRECISION_FIELD_NUMBER: _ClassVar[int]
    count: _containers.RepeatedScalarFieldContainer[int]
    index: _containers.RepeatedScalarFieldContainer[int]
    precision: int
    def __init__(self, precision: _Optional[int] = ..., index: _Optional[_Iterable[int]] = ..., count: _Optional[_Iterable[int]] = ...) -> None: ...

class HistogramLayout(_message.Message):
    __slots__ = ["buckets", "max_relative_error", "mode", "precision", "range_bits"]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    MAX_RELATIVE_ERROR_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    PRECISION_FIELD_NUMBER: _ClassVar[int]
    RANGE_BITS_FIELD_NUMBER: _ClassVar[int]
    buckets: int
    max_relative_error: float
    mode: str
    precision: int
    range_bits: int
    def __init__(self, precision: _Optional[int] = ..., range_bits: _Optional[int] = ..., buckets: _Optional[int] = ..., max_relative_error: _Optional[float] = ..., mode: _Optional[str] = ...) -> None: ...

class Info(_message.Message):
    __slots__ = ["attach_mode", "btf", "config", "cost", "devices", "fanout_ns", "fanout_streams", "histogram", "hostname", "interval_ns", "kernel", "last_seq", "limits", "open_phases", "ring_bytes", "ring_seconds", "started_realtime_ns", "subscribers", "version"]
    class ConfigEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ATTACH_MODE_FIELD_NUMBER: _ClassVar[int]
    BTF_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    FANOUT_NS_FIELD_NUMBER: _ClassVar[int]
    FANOUT_STREAMS_FIELD_NUMBER: _ClassVar[int]
    HISTOGRAM_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_NS_FIELD_NUMBER: _ClassVar[int]
    KERNEL_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    OPEN_PHASES_FIELD_NUMBER: _ClassVar[int]
    RING_BYTES_FIELD_NUMBER: _ClassVar[int]
    RING_SECONDS_FIELD_NUMBER: _ClassVar[int]
    STARTED_REALTIME_NS_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIBERS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    attach_mode: str
    btf: bool
    config: _containers.ScalarMap[str, str]
    cost: AgentCost
    devices: _containers.RepeatedCompositeFieldContainer[DeviceInfo]
    fanout_ns: int
    fanout_streams: int
    histogram: HistogramLayout
    hostname: str
    interval_ns: int
    kernel: str
    last_seq: int
    limits: ServerLimits
    open_phases: _containers.RepeatedCompositeFieldContainer[PhaseMark]
    ring_bytes: int
    ring_seconds: int
    started_realtime_ns: int
    subscribers: int
    version: str
    def __init__(self, version: _Optional[str] = ..., kernel: _Optional[str] = ..., attach_mode: _Optional[str] = ..., btf: bool = ..., histogram: _Optional[_Union[HistogramLayout, _Mapping]] = ..., devices: _Optional[_Iterable[_Union[DeviceInfo, _Mapping]]] = ..., config: _Optional[_Mapping[str, str]] = ..., cost: _Optional[_Union[AgentCost, _Mapping]] = ..., interval_ns: _Optional[int] = ..., ring_seconds: _Optional[int] = ..., started_realtime_ns: _Optional[int] = ..., last_seq: _Optional[int] = ..., subscribers: _Optional[int] = ..., fanout_ns: _Optional[int] = ..., fanout_streams: _Optional[int] = ..., open_phases: _Optional[_Iterable[_Union[PhaseMark, _Mapping]]] = ..., hostname: _Optional[str] = ..., limits: _Optional[_Union[ServerLimits, _Mapping]] = ..., ring_bytes: _Optional[int] = ...) -> None: ...

class InfoRequest(_message.Message):
    __slots__ = ["device_settings"]
    DEVICE_SETTINGS_FIELD_NUMBER: _ClassVar[int]
    device_settings: bool
    def __init__(self, device_settings: bool = ...) -> None: ...

class MarkPhaseRequest(_message.Message):
    __slots__ = ["end", "labels", "name", "parent_id", "phase_id", "session"]
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    END_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARENT_ID_FIELD_NUMBER: _ClassVar[int]
    PHASE_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    end: bool
    labels: _containers.ScalarMap[str, str]
    name: str
    parent_id: int
    phase_id: int
    session: str
    def __init__(self, name: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., end: bool = ..., phase_id: _Optional[int] = ..., session: _Optional[str] = ..., parent_id: _Optional[int] = ...) -> None: ...

class OpStats(_message.Message):
    __slots__ = ["bytes", "completion_unseen", "errors", "ios", "no_queue_ts", "queue_wait_ns", "service_ns", "size_bytes", "total_ns", "untimed"]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_UNSEEN_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    IOS_FIELD_NUMBER: _ClassVar[int]
    NO_QUEUE_TS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_WAIT_NS_FIELD_NUMBER: _ClassVar[int]
    SERVICE_NS_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_NS_FIELD_NUMBER: _ClassVar[int]
    UNTIMED_FIELD_NUMBER: _ClassVar[int]
    bytes: int
    completion_unseen: int
    errors: int
    ios: int
    no_queue_ts: int
    queue_wait_ns: Histogram
    service_ns: Histogram
    size_bytes: Histogram
    total_ns: Histogram
    untimed: int
    def __init__(self, ios: _Optional[int] = ..., bytes: _Optional[int] = ..., errors: _Optional[int] = ..., untimed: _Optional[int] = ..., no_queue_ts: _Optional[int] = ..., completion_unseen: _Optional[int] = ..., queue_wait_ns: _Optional[_Union[Histogram, _Mapping]] = ..., service_ns: _Optional[_Union[Histogram, _Mapping]] = ..., total_ns: _Optional[_Union[Histogram, _Mapping]] = ..., size_bytes: _Optional[_Union[Histogram, _Mapping]] = ...) -> None: ...

class PhaseMark(_message.Message):
    __slots__ = ["abandoned", "begin_id", "end", "id", "labels", "monotonic_ns", "name", "parent_id", "realtime_ns", "session"]
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ABANDONED_FIELD_NUMBER: _ClassVar[int]
    BEGIN_ID_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    MONOTONIC_NS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARENT_ID_FIELD_NUMBER: _ClassVar[int]
    REALTIME_NS_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    abandoned: bool
    begin_id: int
    end: bool
    id: int
    labels: _containers.ScalarMap[str, str]
    monotonic_ns: int
    name: str
    parent_id: int
    realtime_ns: int
    session: str
    def __init__(self, name: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., end: bool = ..., realtime_ns: _Optional[int] = ..., monotonic_ns: _Optional[int] = ..., id: _Optional[int] = ..., begin_id: _Optional[int] = ..., parent_id: _Optional[int] = ..., session: _Optional[str] = ..., abandoned: bool = ...) -> None: ...

class ServerLimits(_message.Message):
    __slots__ = ["mark_bytes", "mark_labels", "mark_rate", "open_phases", "request_bytes", "ring_mib", "ring_seconds", "subscribers"]
    MARK_BYTES_FIELD_NUMBER: _ClassVar[int]
    MARK_LABELS_FIELD_NUMBER: _ClassVar[int]
    MARK_RATE_FIELD_NUMBER: _ClassVar[int]
    OPEN_PHASES_FIELD_NUMBER: _ClassVar[int]
    REQUEST_BYTES_FIELD_NUMBER: _ClassVar[int]
    RING_MIB_FIELD_NUMBER: _ClassVar[int]
    RING_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIBERS_FIELD_NUMBER: _ClassVar[int]
    mark_bytes: int
    mark_labels: int
    mark_rate: int
    open_phases: int
    request_bytes: int
    ring_mib: int
    ring_seconds: int
    subscribers: int
    def __init__(self, mark_rate: _Optional[int] = ..., mark_bytes: _Optional[int] = ..., mark_labels: _Optional[int] = ..., open_phases: _Optional[int] = ..., subscribers: _Optional[int] = ..., request_bytes: _Optional[int] = ..., ring_seconds: _Optional[int] = ..., ring_mib: _Optional[int] = ...) -> None: ...

class SnapshotRequest(_message.Message):
    __slots__ = ["devices", "threads"]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    THREADS_FIELD_NUMBER: _ClassVar[int]
    devices: _containers.RepeatedScalarFieldContainer[str]
    threads: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, devices: _Optional[_Iterable[str]] = ..., threads: _Optional[_Iterable[str]] = ...) -> None: ...

class SubscribeRequest(_message.Message):
    __slots__ = ["devices", "interval_multiple", "replay_seconds", "session", "threads"]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_MULTIPLE_FIELD_NUMBER: _ClassVar[int]
    REPLAY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    THREADS_FIELD_NUMBER: _ClassVar[int]
    devices: _containers.RepeatedScalarFieldContainer[str]
    interval_multiple: int
    replay_seconds: int
    session: str
    threads: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, interval_multiple: _Optional[int] = ..., devices: _Optional[_Iterable[str]] = ..., threads: _Optional[_Iterable[str]] = ..., replay_seconds: _Optional[int] = ..., session: _Optional[str] = ...) -> None: ...

class SyncLatency(_message.Message):
    __slots__ = ["histogram_ns", "sum_ns"]
    HISTOGRAM_NS_FIELD_NUMBER: _ClassVar[int]
    SUM_NS_FIELD_NUMBER: _ClassVar[int]
    histogram_ns: Histogram
    sum_ns: int
    def __init__(self, sum_ns: _Optional[int] = ..., histogram_ns: _Optional[_Union[Histogram, _Mapping]] = ...) -> None: ...

class ThreadSync(_message.Message):
    __slots__ = ["comm", "dev_major", "dev_minor", "device", "disks", "fdatasync", "fdatasync_latency", "flush_bios", "fsync", "fsync_latency", "latency_ns", "latency_sum_ns", "osd_id", "pid", "process", "sync_file_range", "sync_file_range_latency", "threads_folded", "tid"]
    COMM_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    DEV_MAJOR_FIELD_NUMBER: _ClassVar[int]
    DEV_MINOR_FIELD_NUMBER: _ClassVar[int]
    DISKS_FIELD_NUMBER: _ClassVar[int]
    FDATASYNC_FIELD_NUMBER: _ClassVar[int]
    FDATASYNC_LATENCY_FIELD_NUMBER: _ClassVar[int]
    FLUSH_BIOS_FIELD_NUMBER: _ClassVar[int]
    FSYNC_FIELD_NUMBER: _ClassVar[int]
    FSYNC_LATENCY_FIELD_NUMBER: _ClassVar[int]
    LATENCY_NS_FIELD_NUMBER: _ClassVar[int]
    LATENCY_SUM_NS_FIELD_NUMBER: _ClassVar[int]
    OSD_ID_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    PROCESS_FIELD_NUMBER: _ClassVar[int]
    SYNC_FILE_RANGE_FIELD_NUMBER: _ClassVar[int]
    SYNC_FILE_RANGE_LATENCY_FIELD_NUMBER: _ClassVar[int]
    THREADS_FOLDED_FIELD_NUMBER: _ClassVar[int]
    TID_FIELD_NUMBER: _ClassVar[int]
    comm: str
    dev_major: int
    dev_minor: int
    device: str
    disks: _containers.RepeatedScalarFieldContainer[str]
    fdatasync: int
    fdatasync_latency: SyncLatency
    flush_bios: int
    fsync: int
    fsync_latency: SyncLatency
    latency_ns: Histogram
    latency_sum_ns: int
    osd_id: int
    pid: int
    process: str
    sync_file_range: int
    sync_file_range_latency: SyncLatency
    threads_folded: int
    tid: int
    def __init__(self, pid: _Optional[int] = ..., tid: _Optional[int] = ..., comm: _Optional[str] = ..., process: _Optional[str] = ..., osd_id: _Optional[int] = ..., dev_major: _Optional[int] = ..., dev_minor: _Optional[int] = ..., device: _Optional[str] = ..., fsync: _Optional[int] = ..., fdatasync: _Optional[int] = ..., sync_file_range: _Optional[int] = ..., flush_bios: _Optional[int] = ..., latency_sum_ns: _Optional[int] = ..., latency_ns: _Optional[_Union[Histogram, _Mapping]] = ..., fsync_latency: _Optional[_Union[SyncLatency, _Mapping]] = ..., fdatasync_latency: _Optional[_Union[SyncLatency, _Mapping]] = ..., sync_file_range_latency: _Optional[_Union[SyncLatency, _Mapping]] = ..., threads_folded: _Optional[int] = ..., disks: _Optional[_Iterable[str]] = ...) -> None: ...

class Update(_message.Message):
    __slots__ = ["devices", "drops", "end_monotonic_ns", "end_realtime_ns", "first_seq", "merged", "phase_marks", "phases", "precision", "seq", "start_monotonic_ns", "start_realtime_ns", "threads"]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    DROPS_FIELD_NUMBER: _ClassVar[int]
    END_MONOTONIC_NS_FIELD_NUMBER: _ClassVar[int]
    END_REALTIME_NS_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    MERGED_FIELD_NUMBER: _ClassVar[int]
    PHASES_FIELD_NUMBER: _ClassVar[int]
    PHASE_MARKS_FIELD_NUMBER: _ClassVar[int]
    PRECISION_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    START_MONOTONIC_NS_FIELD_NUMBER: _ClassVar[int]
    START_REALTIME_NS_FIELD_NUMBER: _ClassVar[int]
    THREADS_FIELD_NUMBER: _ClassVar[int]
    devices: _containers.RepeatedCompositeFieldContainer[DeviceStats]
    drops: Drops
    end_monotonic_ns: int
    end_realtime_ns: int
    first_seq: int
    merged: int
    phase_marks: int
    phases: _containers.RepeatedCompositeFieldContainer[PhaseMark]
    precision: int
    seq: int
    start_monotonic_ns: int
    start_realtime_ns: int
    threads: _containers.RepeatedCompositeFieldContainer[ThreadSync]
    def __init__(self, seq: _Optional[int] = ..., first_seq: _Optional[int] = ..., merged: _Optional[int] = ..., start_realtime_ns: _Optional[int] = ..., end_realtime_ns: _Optional[int] = ..., start_monotonic_ns: _Optional[int] = ..., end_monotonic_ns: _Optional[int] = ..., devices: _Optional[_Iterable[_Union[DeviceStats, _Mapping]]] = ..., threads: _Optional[_Iterable[_Union[ThreadSync, _Mapping]]] = ..., phases: _Optional[_Iterable[_Union[PhaseMark, _Mapping]]] = ..., drops: _Optional[_Union[Drops, _Mapping]] = ..., precision: _Optional[int] = ..., phase_marks: _Optional[int] = ...) -> None: ...
