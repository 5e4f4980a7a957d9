"""Resource providers: what a site declares (``declare``), the bundle of pools and lists
that serves its requests (``bundle``), dressing a request and judging its response
(``leases``), and the chains that refill session and device pools (``refill``)."""
