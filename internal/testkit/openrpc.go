package testkit

// Discovery is what tests read of the OpenRPC document rpc.discover
// returns: the methods, their params and their result's schema.
type Discovery struct {
	OpenRPC string `json:"openrpc"`
	Methods []struct {
		Name           string `json:"name"`
		ParamStructure string `json:"paramStructure"`
		Params         []struct {
			Name     string         `json:"name"`
			Required bool           `json:"required"`
			Schema   map[string]any `json:"schema"`
		} `json:"params"`
		Result struct {
			Schema map[string]any `json:"schema"`
		} `json:"result"`
	} `json:"methods"`
}
