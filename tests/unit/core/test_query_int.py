"""The one parser of integer query parameters (``limit``, ``offset``, ``minRam`` ...)."""
import pytest

from cloudcore.core.api.validation import query_int
from cloudcore.core.exceptions import Invalid


def test_absent_gives_the_default():
    assert query_int({}, "limit", invalid="x") is None
    assert query_int({}, "offset", invalid="x", default=0) == 0


def test_digits_are_parsed():
    assert query_int({"limit": "12"}, "limit", invalid="x") == 12
    assert query_int({"limit": "0"}, "limit", invalid="x") == 0


def test_not_an_integer_uses_the_services_words():
    with pytest.raises(Invalid) as err:
        query_int({"minRam": "abc"}, "minRam", invalid="Invalid minRam filter [%(value)s]")
    assert str(err.value) == "Invalid minRam filter [abc]"


def test_negative_has_its_own_message_when_given():
    with pytest.raises(Invalid) as err:
        query_int({"limit": "-1"}, "limit", invalid="%(name)s param must be an integer",
                  negative="%(name)s param must be positive")
    assert str(err.value) == "limit param must be positive"
    with pytest.raises(Invalid) as err:
        query_int({"limit": "-1"}, "limit", invalid="bad %(value)s")
    assert str(err.value) == "bad -1"


def test_digits_only_refuses_signs_and_spaces():
    assert query_int({"limit": "+5"}, "limit", invalid="x") == 5
    for raw in ("+5", " 5", "5.0"):
        with pytest.raises(Invalid):
            query_int({"limit": raw}, "limit", invalid="x", digits_only=True)
