"""Units and parsing: GB = 10^9, GiB = 2^30, K = 1,024 tokens."""

import pytest

from k3lib.core.errors import K3InputError
from k3lib.core.units import (
    bytes_to_gb,
    bytes_to_gib,
    format_bytes,
    nonempty_text,
    parse_context_tokens,
    parse_count,
    parse_positive_int,
    parse_size_bytes,
)


@pytest.mark.parametrize(
    "text, tokens",
    [
        ("128K", 131072),
        ("256k", 262144),
        ("1M", 1048576),
        ("1048576", 1048576),
        (8192, 8192),
        ("512K", 524288),
        ("64K", 65536),
        ("1,048,576", 1048576),
        ("0.5M", 524288),
    ],
)
def test_context_strings(text, tokens):
    assert parse_context_tokens(text) == tokens


@pytest.mark.parametrize("bad", ["-5", "abc", "0", 0, -1, "", "12.5", 1.5, None, True, "1G"])
def test_bad_context_names_the_field(bad):
    with pytest.raises(K3InputError) as err:
        parse_context_tokens(bad)
    assert str(err.value).startswith("context:")
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize(
    "text, n",
    [
        ("8GB", 8_000_000_000),
        ("8GiB", 8 * 1024**3),
        ("512MiB", 512 * 1024**2),
        ("1.5GB", 1_500_000_000),
        ("1024", 1024),
        ("2TB", 2 * 10**12),
        ("80 GiB", 80 * 2**30),
    ],
)
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


@pytest.mark.parametrize(
    "field, bound", [("gpus", 4096), ("tp", 4096), ("pp", 4096), ("nodes", 4096), ("max_gpus", 4096), ("batch", 2**16)]
)
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


# --- the rest of the careless-input list (issue 21 §6) ----------------------------------------------


@pytest.mark.parametrize("empty", ["", " ", "\t", "  \n "])
@pytest.mark.parametrize(
    "parse, field",
    [
        (parse_size_bytes, "ram"),
        (parse_context_tokens, "context"),
        (parse_positive_int, "gpus"),
        (parse_count, "expert_layers_on_gpu"),
    ],
)
def test_an_empty_value_is_a_named_error_not_a_default(parse, field, empty):
    # before: "'' is not a size" etc.; now every parser says the same thing, and says it is empty
    with pytest.raises(K3InputError) as err:
        parse(empty, field)
    assert str(err.value).startswith(f"{field}: is empty (allowed: ")
    assert err.value.field == field


def test_nonempty_text_names_the_field():
    assert nonempty_text("  fp8 ", "kv_dtype") == "fp8"
    with pytest.raises(K3InputError, match=r"^weights: is empty \(allowed: a format id"):
        nonempty_text("  ", "weights", "a format id, see `k3plan formats`")


@pytest.mark.parametrize("bad", ["４", "٣", "1e3", "+3", "0x10", "1 024", "3.5", "", "-3", "-0"])
def test_counts_take_ascii_digits_only(bad):
    # '+3' was read as 3 before; every other one here was already refused or is refused as empty
    with pytest.raises(K3InputError, match="^expert_layers_on_gpu:"):
        parse_positive_int(bad, "expert_layers_on_gpu")
    with pytest.raises(K3InputError, match="^expert_layers_on_gpu:"):
        parse_count(bad, "expert_layers_on_gpu")


@pytest.mark.parametrize("text, n", [("3", 3), (" 3 ", 3), ("3.0", 3), ("1,024", 1024), ("\t7\n", 7)])
def test_surrounding_whitespace_is_ignored_by_every_parser(text, n):
    # one rule for counts, contexts and sizes: " 3 " is 3, as int() and argparse users expect
    assert parse_positive_int(text, "gpus") == n
    assert parse_count(text, "gpus") == n
    assert parse_context_tokens(text) == n
    assert parse_size_bytes(text, "ram") == n


def test_parse_count_allows_zero_and_its_own_bounds():
    assert parse_count("0", "expert_layers_on_gpu") == 0
    assert parse_count(0, "expert_layers_on_gpu") == 0
    assert parse_count("61", "expert_layers_on_gpu", maximum=61) == 61
    with pytest.raises(K3InputError, match=r"^expert_layers_on_gpu: '62' is more than 61"):
        parse_count("62", "expert_layers_on_gpu", maximum=61)
    with pytest.raises(K3InputError, match=r"must be at least 2"):
        parse_count("1", "layers", minimum=2)
    assert parse_count("-1", "n_gpu_layers", minimum=-1) == -1  # a field whose -1 means "all"
    assert parse_count("4096", "gpus") == 4096  # the field's physical bound
    with pytest.raises(K3InputError, match="more than 4,096"):
        parse_count("4097", "gpus")
    for bad in (True, None, 2.5, "nan"):
        with pytest.raises(K3InputError, match="^n:"):
            parse_count(bad, "n")
