"""The admin password a server gets when the request names none (``generate_password``): twelve
letters and digits from the system's random source, every one of the 62 possible in each place."""
from __future__ import annotations

import string

from servers.services.create import generate_password


def test_a_generated_password_is_letters_and_digits_of_the_length_asked() -> None:
    # when passwords are generated
    passwords = [generate_password() for _ in range(2000)] + [generate_password(40) for _ in range(50)]
    # then each has the length asked, of letters and digits only, and they differ
    assert {len(p) for p in passwords[:2000]} == {12} and {len(p) for p in passwords[2000:]} == {40}
    assert set("".join(passwords)) <= set(string.ascii_letters + string.digits)
    assert len(set(passwords)) == len(passwords)


def test_every_letter_and_digit_comes_in_every_place() -> None:
    # (62 characters, 4,000 passwords: one missing from some place by chance: about 1e-25)
    passwords = [generate_password() for _ in range(4000)]
    for place in range(12):
        assert {p[place] for p in passwords} == set(string.ascii_letters + string.digits), place
