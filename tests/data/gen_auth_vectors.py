#!/usr/bin/python3
"""Prints the authentication vectors used by tests/unit/check_rt_auth.c, computed with Debian's
python3-autobahn (autobahn.wamp.auth) and python3-nacl (the client side of WAMP-CRA and
WAMP-Cryptosign). Run: /usr/bin/python3 tests/data/gen_auth_vectors.py"""
import binascii
import hashlib

from autobahn.wamp import auth
from nacl.signing import SigningKey

# WAMP-CRA: signature of a fixed challenge with a plain secret.
CHALLENGE = ('{"authid":"joe","authrole":"user","authmethod":"wampcra","authprovider":"static",'
             '"session":1234,"nonce":"abc","timestamp":"2026-11-22T05:00:00.000Z"}')
print("wcs(secret1, CHALLENGE) =", auth.compute_wcs(b"secret1", CHALLENGE.encode()).decode())

# Salted WAMP-CRA: the key derived from a password, then the signature made with it.
key = auth.derive_key("secret2", "salt123", 100, 16)
print("derive_key('secret2', 'salt123', 100, 16) =", key.decode())
print("wcs(derived, CHALLENGE) =", auth.compute_wcs(key, CHALLENGE.encode()).decode())
print("derive_key('secret2', 'salt123', 1000, 32) =",
      auth.derive_key("secret2", "salt123", 1000, 32).decode())

# Cross-check of the PBKDF2 vectors (RFC 7914 section 11) with hashlib.
print("pbkdf2(passwd, salt, 1, 64) =", hashlib.pbkdf2_hmac("sha256", b"passwd", b"salt", 1, 64).hex())
print("pbkdf2(Password, NaCl, 80000, 64) =",
      hashlib.pbkdf2_hmac("sha256", b"Password", b"NaCl", 80000, 64).hex())

# Cryptosign: a key pair from a fixed seed, and the signature autobahn would send for a fixed
# challenge (signature || challenge, hex).
sk = SigningKey(bytes(range(32)))
print("pubkey(seed 00..1f) =", sk.verify_key.encode().hex())
challenge = bytes(range(32, 64))
signed = sk.sign(challenge)
print("signature || challenge =", binascii.b2a_hex(signed.signature + challenge).decode())
