"""Property-based fuzzing of the HTTP API from its own OpenAPI document (schemathesis): no request, however odd,
may make the server answer 5xx, and every answer must match what the document promises (status codes, content
types, headers, bodies, and authentication being enforced). A small example budget per operation keeps the run
well under a minute.
"""
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error

from conftest import Anykv, anykv_binary

PASSWORD = "fuzz-pw"

# schemathesis 3.x generates through hypothesis-jsonschema 0.23, which breaks on hypothesis 6.170.10 and later
# (conjecture's `many` lost `more()`): say so plainly instead of failing every operation with an AttributeError.
from hypothesis.internal.conjecture.utils import many as _many  # noqa: E402

if not hasattr(_many, "more"):
    raise ImportError("this hypothesis is too new for hypothesis-jsonschema: pin hypothesis<6.170.10 in requirements.txt")


@pytest.fixture(scope="module")
def server():
    s = Anykv(anykv_binary(), extra=["--requirepass", PASSWORD]).start()
    yield s
    s.close()


@pytest.fixture(scope="module")
def api_schema(server):
    # Header values are drawn from visible ASCII and space: net/http rejects control characters in headers with
    # a plain-text 400 before any handler runs, which says nothing about the API.
    visible = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E))
    return schemathesis.from_uri(
        f"http://{server.host}:{server.http_port}/v1/openapi.json",
        headers={"Authorization": f"Bearer {PASSWORD}"},  # the description needs the password too
        validate_schema=True,
        data_generation_methods=[schemathesis.DataGenerationMethod.positive, schemathesis.DataGenerationMethod.negative],
        generation_config=schemathesis.GenerationConfig(headers=schemathesis.HeaderConfig(strategy=visible)),
    )


schema = schemathesis.from_pytest_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_conforms_and_never_fails(case):
    auth = {"Authorization": f"Bearer {PASSWORD}"}
    if case.data_generation_method == schemathesis.DataGenerationMethod.negative:
        # Invalid input must be refused cleanly; which 4xx it earns is not for the fuzzer to judge (unknown query
        # parameters, for one, are ignored as HTTP APIs commonly do).
        case.call_and_validate(headers=auth, checks=(not_a_server_error,))
    else:
        case.call_and_validate(headers=auth)
