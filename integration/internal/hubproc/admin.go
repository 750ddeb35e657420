package hubproc

// AdminURL returns the base URL of the hub's second listener
// (-metrics-addr, with Options.Admin), such as http://127.0.0.1:41235,
// where the operator's admin API answers at /rpc; "" without
// Options.Admin.
func (h *Hub) AdminURL() string {
	if h.admin == "" {
		return ""
	}
	return "http://" + h.admin
}
