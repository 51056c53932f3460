"""Mail processing (James's mailet container): processors of matcher/mailet pairs fed by the spooler.

Modules: ``api`` (Matcher, Mailet, Params), ``context`` (MailetContext), ``config`` (the YAML
file), ``container`` (processors, splitting, error routing), ``matchers``, the mailet families
(``mailets``, ``headers``, ``rewrite``, ``delivery``, ``remote``, ``bounce``), ``registry``
(names usable in the YAML), ``spooler`` and ``reprocess``.
"""
