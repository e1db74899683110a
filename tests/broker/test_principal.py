import pytest

from odradek.broker.principal import ANONYMOUS, CLIENT_PRINCIPAL, KafkaPrincipal


def test_parse_keeps_colons_in_the_name() -> None:
    principal = KafkaPrincipal.parse("User:CN=a:b")
    assert principal == KafkaPrincipal("User", "CN=a:b")
    assert str(principal) == "User:CN=a:b"


@pytest.mark.parametrize("text", ["alice", ":alice", ""])
def test_parse_refuses_text_without_a_type(text: str) -> None:
    with pytest.raises(ValueError, match="Type:name"):
        KafkaPrincipal.parse(text)


def test_unauthenticated_requests_are_anonymous() -> None:
    assert CLIENT_PRINCIPAL.get() == ANONYMOUS == KafkaPrincipal.parse("User:ANONYMOUS")
