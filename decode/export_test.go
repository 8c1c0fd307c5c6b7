package decode

// DecodeWithParseV2 decodes a payload the way Decode does for every
// message but Insert, Update and Delete: through pglogrepl.ParseV2. Tests
// compare decodeChange with it.
func (d *Decoder) DecodeWithParseV2(data []byte) (Message, error) { return d.decodeV2(data) }
