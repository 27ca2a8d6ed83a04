"""OtlpExporter against a real OTLP/HTTP receiver decoding protobuf."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from sessionstore.exporters import EventBus
from sessionstore.exporters._otlp import OtlpExporter, flatten
from tests.support.events import MODEL, SESSION, T0, compaction, trigger_decision
from tests.support.servers import OtlpReceiver, Recorder, dead_url, serve

Primitive = str | bool | int | float
Scalar = Primitive | list[Primitive]


def _primitive(value: AnyValue) -> Primitive:
    kind = value.WhichOneof("value")
    assert kind in ("string_value", "bool_value", "int_value", "double_value")
    result: Primitive = getattr(value, kind)
    return result


def _value(value: AnyValue) -> Scalar:
    if value.WhichOneof("value") == "array_value":
        return [_primitive(item) for item in value.array_value.values]
    return _primitive(value)


def _attrs(attributes: Iterator[KeyValue]) -> dict[str, Scalar]:
    return {item.key: _value(item.value) for item in attributes}


@pytest.fixture
def receiver() -> Iterator[Recorder]:
    with serve(OtlpReceiver) as server:
        yield server


def test_trigger_decision_arrives_as_span_event(receiver: Recorder) -> None:
    exporter = OtlpExporter(f"{receiver.url}/v1/traces", service_name="svc-test")
    with EventBus([exporter]) as bus:
        bus.publish([trigger_decision()])
        assert bus.flush(10)
        assert bus.failures == 0
    exporter.close()

    [request] = receiver.accepted
    [resource_spans] = request.resource_spans
    assert _attrs(iter(resource_spans.resource.attributes))["service.name"] == "svc-test"
    [span] = resource_spans.scope_spans[0].spans
    assert span.name == "compact"
    span_attrs = _attrs(iter(span.attributes))
    assert span_attrs["gen_ai.conversation.id"] == SESSION
    assert span_attrs["gen_ai.request.model"] == MODEL
    assert span_attrs["sessionstore.t_est"] == 112345
    assert span_attrs["sessionstore.max_tokens"] == 128000
    assert "gen_ai.usage.input_tokens" not in span_attrs

    [event] = span.events
    assert event.name == "compact.trigger_decision"
    attrs = _attrs(iter(event.attributes))
    assert attrs["triggered"] is True
    assert attrs["t_est"] == 112345
    assert attrs["max"] == 128000
    assert attrs["policy.trigger_pct"] == 0.85
    assert attrs["kept.recent_turns"] == 6
    assert attrs["severity"] == "info"
    assert event.time_unix_nano == span.start_time_unix_nano


def test_compaction_is_one_span_with_error_status(receiver: Recorder) -> None:
    exporter = OtlpExporter(f"{receiver.url}/v1/traces")
    exporter.export(compaction())  # synchronous: sent once export() returns
    exporter.close()
    [span] = receiver.accepted[0].resource_spans[0].scope_spans[0].spans
    assert [event.name for event in span.events] == [event.event for event in compaction()]
    assert span.status.code == span.status.STATUS_CODE_ERROR
    assert _attrs(iter(span.attributes))["sessionstore.summary_tokens"] == 480


def test_unreachable_collector_is_a_counted_failure() -> None:
    exporter = OtlpExporter(f"{dead_url()}/v1/traces", timeout=0.5)
    with EventBus([exporter]) as bus:
        bus.publish([trigger_decision()])
        assert bus.flush(10)
        assert bus.failures == 1
    exporter.close()


def test_flatten_dots_dicts_keeps_homogeneous_lists_and_json_encodes_the_rest() -> None:
    fields = {"a": {"b": 1, "c": {"d": "x"}}, "ids": [1, 2], "mixed": [1, "a"], "none": None}
    assert dict(flatten(fields)) == {
        "a.b": 1,
        "a.c.d": "x",
        "ids": (1, 2),
        "mixed": '[1, "a"]',
    }
    assert dict(flatten({"flags": [True, 1]})) == {"flags": "[true, 1]"}


def test_other_values_become_strings_and_timeout_is_validated() -> None:
    assert dict(flatten({"at": T0})) == {"at": "2025-10-19 06:00:00+00:00"}
    with pytest.raises(ValueError, match="timeout"):
        OtlpExporter("http://127.0.0.1:4318/v1/traces", timeout=0)
