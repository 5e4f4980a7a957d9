"""A fingerprint-checking site on loopback: TLS (JA3, JA4) and HTTP/2 (Akamai) read from
what each client sends, and clients refused whose fingerprint is not a browser's.

``hello`` reads a ClientHello, ``http2`` an HTTP/2 client's first frames, ``server``
serves and judges (see there), with a test's own CA from ``sandbox.tls``.
"""
