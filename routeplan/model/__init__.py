"""The plain data every layer shares: workers, loads, a plan's budget and answer, the routing
table, the key → key group hash and the name rule.

Nothing here plans or stores anything; strategies (``routeplan.planning``) take these values and
return them, the publishing layer (``routeplan.publishing``) writes and reads them.
"""
