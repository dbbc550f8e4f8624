"""Calls to endpoints a tenant declares (worker URLs and Lambdas), always behind the network guard."""
