package hub

import "encoding/json"

// paramsForm is how a request gives its params.
type paramsForm uint8

const (
	paramsAbsent     paramsForm = iota // omitted, or null
	paramsByName                       // an object
	paramsByPosition                   // an array
	paramsScalar                       // a string, number or boolean
)

// formOf returns the form of params, from their first byte.
func formOf(params []byte) paramsForm {
	for _, c := range params {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return paramsByName
		case '[':
			return paramsByPosition
		case 'n':
			return paramsAbsent
		}
		return paramsScalar
	}
	return paramsAbsent
}

// readParams decodes params that are an object into named and params that
// are an array into positional; a nil target leaves its form undecoded. It
// returns the form of params, and the decoding error if any. Params of
// another form leave both targets as they are: each method then refuses
// what it misses.
func readParams(params json.RawMessage, named, positional any) (paramsForm, error) {
	form := formOf(params)
	switch {
	case form == paramsByName && named != nil:
		return form, json.Unmarshal(params, named)
	case form == paramsByPosition && positional != nil:
		return form, json.Unmarshal(params, positional)
	}
	return form, nil
}
