"""A new host's SSH key: fetched, shown as its SHA256 fingerprint, trusted only on a match, recorded in known_hosts.

The key is read with `asyncssh.get_server_host_key` (a key exchange only: no login, nothing trusted yet). The
fingerprint is OpenSSH's form (`SHA256:` + unpadded base64 of the key's SHA-256), the one `ssh-keygen -lf
/etc/ssh/ssh_host_ed25519_key.pub` prints on the host, so a person can compare it out of band.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import asyncssh

from bot.remote import HostUnreachable


class HostKeyMismatch(Exception):
    """The key the host presented is not the one the person said to trust (or known_hosts already holds)."""


@dataclass(frozen=True)
class HostKey:
    address: str
    port: int
    key: asyncssh.SSHKey

    @property
    def fingerprint(self) -> str:
        return self.key.get_fingerprint("sha256")

    @property
    def algorithm(self) -> str:
        return self.key.get_algorithm()

    def known_hosts_line(self) -> str:
        """`ADDRESS ssh-ed25519 AAAA...` (port 22) or `[ADDRESS]:PORT ...`, as OpenSSH writes them."""
        pattern = self.address if self.port == 22 else f"[{self.address}]:{self.port}"
        key_type, key_data = self.key.export_public_key("openssh").decode().split()[:2]
        return f"{pattern} {key_type} {key_data}\n"


async def fetch_host_key(address: str, port: int, *, timeout_s: float = 10.0) -> HostKey:
    try:
        # config=[]: our own options decide; never whoever runs the bot's ~/.ssh/config.
        key = await asyncio.wait_for(asyncssh.get_server_host_key(address, port, config=[]), timeout_s)
    except (OSError, asyncssh.Error, asyncio.TimeoutError) as exc:
        raise HostUnreachable(
            f"cannot reach {address}:{port} to read its host key ({type(exc).__name__}: {exc}). "
            f"Is the address right and sshd running there?"
        ) from None
    if key is None:
        raise HostUnreachable(f"{address}:{port} presented no host key (GSS key exchange?); add it to known_hosts by hand")
    return HostKey(address, port, key)


def normalise_fingerprint(text: str) -> str:
    """`SHA256:abc...`, tolerating a missing prefix, surrounding space and base64 padding."""
    text = text.strip()
    if text.upper().startswith("SHA256:"):
        text = text[7:]
    return "SHA256:" + text.rstrip("=")


def known_key(known_hosts: Path, address: str, port: int) -> list[asyncssh.SSHKey]:
    """The keys known_hosts already holds for this address and port (empty when none, or no file)."""
    if not known_hosts.exists():
        return []
    matched = asyncssh.match_known_hosts(str(known_hosts), address, address, port if port != 22 else None)
    return list(matched[0])


def check_against_known(known_hosts: Path, host_key: HostKey) -> bool:
    """True when known_hosts already trusts this very key; raises when it names a different one for the host."""
    keys = known_key(known_hosts, host_key.address, host_key.port)
    if not keys:
        return False
    if any(k.public_data == host_key.key.public_data for k in keys):
        return True
    raise HostKeyMismatch(
        f"{known_hosts} already holds a different key for {host_key.address}:{host_key.port} (the host now "
        f"presents {host_key.fingerprint}). If the host was reinstalled, verify its new key out of band and remove "
        f"the old line (ssh-keygen -R '[{host_key.address}]:{host_key.port}' -f {known_hosts}); nothing was written."
    )


def scratch_known_hosts(host_key: HostKey) -> Path:
    """A temporary known_hosts holding only this key, for the onboarding's own connection before anything is
    recorded (the caller removes it)."""
    handle, name = tempfile.mkstemp(prefix="deploybot-known-hosts-")
    with os.fdopen(handle, "w") as out:
        out.write(host_key.known_hosts_line())
    return Path(name)


def record(known_hosts: Path, host_key: HostKey) -> None:
    """Append the key's line (the file and its folder are created, 0600 / 0700, as ssh would)."""
    known_hosts.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    existing = known_hosts.read_text() if known_hosts.exists() else ""
    separator = "" if not existing or existing.endswith("\n") else "\n"
    fd = os.open(known_hosts, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a") as out:
        out.write(separator + host_key.known_hosts_line())
