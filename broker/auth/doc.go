// Package auth owns who a connection is: TLS for listeners (PEM key and
// certificate files, reloaded when they change, client certificates mapped
// to principals by Kafka's ssl.principal.mapping.rules) and the server
// side of SASL (PLAIN against users from a JAAS config, SCRAM-SHA-256 and
// SCRAM-SHA-512 against credentials kept in the metadata log).
//
// It does no network I/O of its own: broker/server hands it the bytes a
// client sent in SaslAuthenticate and writes back what it returns. ACLs
// and quotas, which will decide what a principal may do, come later and
// will live here too.
//
// A ServerTLS is safe for concurrent use (every handshake of a listener
// shares one); a SASL exchange (Exchange) belongs to one connection.
package auth
