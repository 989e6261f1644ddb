"""Units and parsing: GB = 10^9, GiB = 2^30, K = 1,024 tokens."""
import pytest

from k3lib.core.errors import K3InputError
from k3lib.core.units import (bytes_to_gb, bytes_to_gib, format_bytes, parse_context_tokens, parse_positive_int,
                         parse_size_bytes)


@pytest.mark.parametrize("text, tokens", [
    ("128K", 131072), ("256k", 262144), ("1M", 1048576), ("1048576", 1048576), (8192, 8192),
    ("512K", 524288), ("64K", 65536), ("1,048,576", 1048576), ("0.5M", 524288),
])
def test_context_strings(text, tokens):
    assert parse_context_tokens(text) == tokens


@pytest.mark.parametrize("bad", ["-5", "abc", "0", 0, -1, "", "12.5", 1.5, None, True, "1G"])
def test_bad_context_names_the_field(bad):
    with pytest.raises(K3InputError) as err:
        parse_context_tokens(bad)
    assert str(err.value).startswith("context:")
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize("text, n", [
    ("8GB", 8_000_000_000), ("8GiB", 8 * 1024**3), ("512MiB", 512 * 1024**2), ("1.5GB", 1_500_000_000),
    ("1024", 1024), ("2TB", 2 * 10**12), ("80 GiB", 80 * 2**30),
])
def test_sizes(text, n):
    assert parse_size_bytes(text) == n


@pytest.mark.parametrize("bad", ["-8GB", "eight GB", "8GQ", "", None])
def test_bad_sizes(bad):
    with pytest.raises(K3InputError, match="^activation:"):
        parse_size_bytes(bad, "activation")


def test_gb_vs_gib():
    assert bytes_to_gb(80 * 2**30) == pytest.approx(85.899345920)
    assert bytes_to_gib(85_899_345_920) == 80
    assert format_bytes(32 * 2**30, "GiB") == "32.0 GiB"
    assert format_bytes(32 * 2**30, "GB") == "34.4 GB"


@pytest.mark.parametrize("bad", [0, "0", -2, "two", 2.5, None])
def test_positive_int(bad):
    with pytest.raises(K3InputError, match="^gpus:"):
        parse_positive_int(bad, "gpus")
