package client

import "github.com/switchboard-rpc/switchboard/internal/ident"

// UserWord returns an identity (a token's subject, the user of WhoAmI)
// escaped into one topic word, as the hub puts it into topics, rules
// ({user}) and rpc.call addresses ("user.<identity>"): letters, digits,
// '_' and '-' stay, every other byte of its UTF-8 becomes ':' and two
// lower-case hex digits. A client builds the topics of a user with it:
// "user." + UserWord("john.doe@example.com") + ".inbox" is
// "user.john:2edoe:40example:2ecom.inbox". It is hub.UserWord, for
// programs that do not import the hub.
func UserWord(identity string) string { return ident.Word(identity) }
