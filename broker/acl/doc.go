// Package acl is the authorizer: ACL bindings, the filters of
// DescribeAcls and DeleteAcls, and the decision Kafka's StandardAuthorizer
// makes for one principal, host, operation and resource.
//
// A Set is immutable: the cluster metadata image holds one, and a change
// makes a new Set. Every method is safe for concurrent use.
package acl
