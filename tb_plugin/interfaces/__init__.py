"""The interfaces beyond the TensorBoard tab: the notebook API (``import kinetoscope``) and the MCP
server for coding agents (``kinetoscope mcp LOGDIR``). Both read the registry's views and
:mod:`tb_plugin.registry.report` exactly as the routes and ``kinetoscope report`` do: no number is
computed here, only selected and shaped (:mod:`.queries`)."""
