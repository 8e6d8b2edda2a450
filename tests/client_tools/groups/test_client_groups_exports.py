from __future__ import annotations

import headrace.client_tools.groups as groups


def test_public_surface_is_pinned() -> None:
    assert sorted(groups.__all__) == [
        "AdminRequestError",
        "GroupAdminClient",
        "decode_assignment",
        "register",
    ]
    for name in groups.__all__:
        assert getattr(groups, name) is not None


def test_a_refused_request_carries_kafkas_code() -> None:
    error = groups.AdminRequestError("deleting 'g'", 68, "NON_EMPTY_GROUP", False)
    assert str(error) == "deleting 'g': NON_EMPTY_GROUP"
    assert (error.error_code, error.retriable) == (68, False)
