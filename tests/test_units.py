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


# --- hostile and careless input (issue 14): ASCII digits only, physical upper bounds ---------------

@pytest.mark.parametrize("bad", ["٨", "٨٨٨", "８", "१२", "1e6", "1E3", "0x10", "inf", "nan", "9" * 65])
def test_counts_take_ascii_decimal_digits_only(bad):
    with pytest.raises(K3InputError, match="^batch:"):
        parse_positive_int(bad, "batch")


@pytest.mark.parametrize("field, bound", [("gpus", 4096), ("tp", 4096), ("pp", 4096), ("nodes", 4096),
                                          ("max_gpus", 4096), ("batch", 2**16)])
def test_counts_have_a_physical_upper_bound(field, bound):
    assert parse_positive_int(str(bound), field) == bound
    with pytest.raises(K3InputError, match=f"^{field}: .*more than"):
        parse_positive_int(str(bound + 1), field)
    with pytest.raises(K3InputError, match=f"^{field}:"):
        parse_positive_int("99999999999999999999999", field)
    with pytest.raises(K3InputError, match=f"^{field}:"):
        parse_positive_int(10**30, field)


def test_context_bound_is_16m_tokens_and_exact():
    assert parse_context_tokens("16M") == 16 * 1024**2 == 2**24
    for bad in ["999999999999999999999", "17M", 2**24 + 1, 1e300, "١٢٨K"]:
        with pytest.raises(K3InputError, match="^context:"):
            parse_context_tokens(bad)


def test_sizes_are_bounded_and_ascii():
    assert parse_size_bytes("10000TB") == 10**16
    for bad in ["10001TB", "1e30GB", "٨GB", 1e300, float("inf")]:
        with pytest.raises(K3InputError, match="^ram:"):
            parse_size_bytes(bad, "ram")


def test_numpy_integers_still_parse():
    np = pytest.importorskip("numpy")
    assert parse_positive_int(np.int64(8), "gpus") == 8
    assert parse_context_tokens(np.int64(4096)) == 4096
    assert parse_positive_int(8.0, "gpus") == 8
