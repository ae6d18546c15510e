"""No text a user types reaches a remote shell unquoted: every argv value comes back out of `sh` intact."""

import subprocess

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.remote import remote_command

SHELL_SYNTAX = st.sampled_from([";", "&&", "||", "|", "$(", ")", "`", "$HOME", "${IFS}", ">", "<", "'", '"', "\\",
                                "\n", "*", "?", "~", "#", "&", "!", " ", "\t", "rm -rf /", "$((1+1))"])
ARG = st.lists(st.one_of(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                                 max_size=20), SHELL_SYNTAX), max_size=6).map("".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(ARG, min_size=1, max_size=4))
def test_every_value_reaches_the_program_as_one_literal_argument(args):
    # printf prints each argument NUL-terminated: what arrives is exactly what we passed, nothing expanded or split.
    argv = ["printf", "%s\\0", *args]
    if any(a.startswith("~/") for a in args):
        return  # a leading ~/ is the one documented expansion (host paths); tested separately
    out = subprocess.run(["sh", "-c", remote_command(argv)], capture_output=True, check=True).stdout
    assert out.split(b"\0")[:-1] == [a.encode() for a in args]


def test_a_leading_tilde_is_the_hosts_home_and_the_rest_stays_quoted():
    command = remote_command(["printf", "%s", "~/ml env/$(id)"])
    out = subprocess.run(["sh", "-c", command], capture_output=True, check=True, env={"HOME": "/home/deploy"}).stdout
    assert out == b"/home/deploy/ml env/$(id)"
