package parquet

import (
	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

// The activity events of the writer benchmarks, as rows of Go structs for
// the writers that take structs: (c) xitongsys and (d) parquet-go. Both
// have the columns of schema.Activity(), in its order and with its types;
// dictionary encoding on the low-cardinality columns (activityDictColumns).
// activityX has the same shape with xitongsys tags, so that one converts
// to the other.

// activityDictColumns are the columns the struct writers dictionary-encode
// and "b tuned" names in Options.DictionaryColumns.
var activityDictColumns = []string{"type", "event", "channel", "context.locale", "context.timezone",
	"context.userAgent", "context.browser.name", "context.browser.version", "context.os.name", "context.os.version",
	"context.device.type", "context.page.referrer", "context.library.name", "context.library.version"}

// Nested types are aliases of unnamed struct types, so that activityX
// (the same types with other tags) converts to activityP.
type (
	nameVersionP = struct {
		Name    *string `parquet:"name,optional,dict"`
		Version *string `parquet:"version,optional,dict"`
	}
	deviceP = struct {
		ID           *string `parquet:"id,optional"`
		Type         *string `parquet:"type,optional,dict"`
		Manufacturer *string `parquet:"manufacturer,optional"`
		Model        *string `parquet:"model,optional"`
		Name         *string `parquet:"name,optional"`
	}
	pageP = struct {
		URL      *string `parquet:"url,optional"`
		Path     *string `parquet:"path,optional"`
		Referrer *string `parquet:"referrer,optional,dict"`
		Title    *string `parquet:"title,optional"`
		Search   *string `parquet:"search,optional"`
	}
	campaignP = struct {
		Name    *string `parquet:"name,optional"`
		Source  *string `parquet:"source,optional"`
		Medium  *string `parquet:"medium,optional"`
		Term    *string `parquet:"term,optional"`
		Content *string `parquet:"content,optional"`
	}
	contextP = struct {
		IP        *string       `parquet:"ip,optional"`
		Locale    *string       `parquet:"locale,optional,dict"`
		Timezone  *string       `parquet:"timezone,optional,dict"`
		UserAgent *string       `parquet:"userAgent,optional,dict"`
		Browser   *nameVersionP `parquet:"browser,optional"`
		OS        *nameVersionP `parquet:"os,optional"`
		Device    *deviceP      `parquet:"device,optional"`
		Page      *pageP        `parquet:"page,optional"`
		Campaign  *campaignP    `parquet:"campaign,optional"`
		Library   *nameVersionP `parquet:"library,optional"`
		Extra     *string       `parquet:"_extra,optional"`
	}
)

type activityP struct {
	Type              string    `parquet:"type,dict"`
	Event             *string   `parquet:"event,optional,dict"`
	Name              *string   `parquet:"name,optional"`
	Category          *string   `parquet:"category,optional"`
	MessageID         string    `parquet:"messageId"`
	AnonymousID       *string   `parquet:"anonymousId,optional"`
	UserID            *string   `parquet:"userId,optional"`
	GroupID           *string   `parquet:"groupId,optional"`
	PreviousID        *string   `parquet:"previousId,optional"`
	Timestamp         int64     `parquet:"timestamp,timestamp(millisecond)"`
	OriginalTimestamp *int64    `parquet:"originalTimestamp,optional,timestamp(millisecond)"`
	SentAt            *int64    `parquet:"sentAt,optional,timestamp(millisecond)"`
	ReceivedAt        *int64    `parquet:"receivedAt,optional,timestamp(millisecond)"`
	Channel           *string   `parquet:"channel,optional,dict"`
	Context           *contextP `parquet:"context,optional"`
	Properties        *string   `parquet:"properties,optional"`
	Traits            *string   `parquet:"traits,optional"`
	Integrations      *string   `parquet:"integrations,optional"`
	Extra             *string   `parquet:"_extra,optional"`
}

type (
	nameVersionX = struct {
		Name    *string `parquet:"name=name, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL, encoding=PLAIN_DICTIONARY"`
		Version *string `parquet:"name=version, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL, encoding=PLAIN_DICTIONARY"`
	}
	deviceX = struct {
		ID           *string `parquet:"name=id, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
		Type         *string `parquet:"name=type, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL, encoding=PLAIN_DICTIONARY"`
		Manufacturer *string `parquet:"name=manufacturer, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
		Model        *string `parquet:"name=model, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
		Name         *string `parquet:"name=name, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
	}
	pageX = struct {
		URL      *string `parquet:"name=url, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
		Path     *string `parquet:"name=path, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
		Referrer *string `parquet:"name=referrer, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL, encoding=PLAIN_DICTIONARY"`
		Title    *string `parquet:"name=title, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
		Search   *string `parquet:"name=search, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
	}
	campaignX = struct {
		Name    *string `parquet:"name=name, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
		Source  *string `parquet:"name=source, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
		Medium  *string `parquet:"name=medium, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
		Term    *string `parquet:"name=term, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
		Content *string `parquet:"name=content, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
	}
	contextX = struct {
		IP        *string       `parquet:"name=ip, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
		Locale    *string       `parquet:"name=locale, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL, encoding=PLAIN_DICTIONARY"`
		Timezone  *string       `parquet:"name=timezone, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL, encoding=PLAIN_DICTIONARY"`
		UserAgent *string       `parquet:"name=userAgent, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL, encoding=PLAIN_DICTIONARY"`
		Browser   *nameVersionX `parquet:"name=browser, repetitiontype=OPTIONAL"`
		OS        *nameVersionX `parquet:"name=os, repetitiontype=OPTIONAL"`
		Device    *deviceX      `parquet:"name=device, repetitiontype=OPTIONAL"`
		Page      *pageX        `parquet:"name=page, repetitiontype=OPTIONAL"`
		Campaign  *campaignX    `parquet:"name=campaign, repetitiontype=OPTIONAL"`
		Library   *nameVersionX `parquet:"name=library, repetitiontype=OPTIONAL"`
		Extra     *string       `parquet:"name=_extra, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
	}
)

type activityX struct {
	Type              string    `parquet:"name=type, type=BYTE_ARRAY, convertedtype=UTF8, encoding=PLAIN_DICTIONARY"`
	Event             *string   `parquet:"name=event, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL, encoding=PLAIN_DICTIONARY"`
	Name              *string   `parquet:"name=name, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
	Category          *string   `parquet:"name=category, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
	MessageID         string    `parquet:"name=messageId, type=BYTE_ARRAY, convertedtype=UTF8"`
	AnonymousID       *string   `parquet:"name=anonymousId, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
	UserID            *string   `parquet:"name=userId, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
	GroupID           *string   `parquet:"name=groupId, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
	PreviousID        *string   `parquet:"name=previousId, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
	Timestamp         int64     `parquet:"name=timestamp, type=INT64, convertedtype=TIMESTAMP_MILLIS"`
	OriginalTimestamp *int64    `parquet:"name=originalTimestamp, type=INT64, convertedtype=TIMESTAMP_MILLIS, repetitiontype=OPTIONAL"`
	SentAt            *int64    `parquet:"name=sentAt, type=INT64, convertedtype=TIMESTAMP_MILLIS, repetitiontype=OPTIONAL"`
	ReceivedAt        *int64    `parquet:"name=receivedAt, type=INT64, convertedtype=TIMESTAMP_MILLIS, repetitiontype=OPTIONAL"`
	Channel           *string   `parquet:"name=channel, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL, encoding=PLAIN_DICTIONARY"`
	Context           *contextX `parquet:"name=context, repetitiontype=OPTIONAL"`
	Properties        *string   `parquet:"name=properties, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
	Traits            *string   `parquet:"name=traits, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
	Integrations      *string   `parquet:"name=integrations, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
	Extra             *string   `parquet:"name=_extra, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
}

// activityRows appends the rows of rec, a batch of schema.Activity(), as
// activityP values.
func activityRows(dst []activityP, rec arrow.Record) []activityP {
	col := func(name string) arrow.Array { return rec.Column(rec.Schema().FieldIndices(name)[0]) }
	field := func(a arrow.Array, name string) arrow.Array {
		s := a.(*array.Struct)
		i, _ := s.DataType().(*arrow.StructType).FieldIdx(name)
		return s.Field(i)
	}
	str := func(a arrow.Array, i int) *string {
		if a.IsNull(i) {
			return nil
		}
		s := a.(*array.String).Value(i)
		return &s
	}
	ts := func(a arrow.Array, i int) *int64 {
		if a.IsNull(i) {
			return nil
		}
		v := int64(a.(*array.Timestamp).Value(i))
		return &v
	}
	ctx := col("context")
	page, lib, browser, os, device, campaign := field(ctx, "page"), field(ctx, "library"), field(ctx, "browser"),
		field(ctx, "os"), field(ctx, "device"), field(ctx, "campaign")
	for i := range int(rec.NumRows()) {
		var r activityP
		r.Type = *str(col("type"), i)
		r.Event, r.Name, r.Category = str(col("event"), i), str(col("name"), i), str(col("category"), i)
		r.MessageID = *str(col("messageId"), i)
		r.AnonymousID, r.UserID, r.GroupID, r.PreviousID = str(col("anonymousId"), i), str(col("userId"), i), str(col("groupId"), i), str(col("previousId"), i)
		r.Timestamp = *ts(col("timestamp"), i)
		r.OriginalTimestamp, r.SentAt, r.ReceivedAt = ts(col("originalTimestamp"), i), ts(col("sentAt"), i), ts(col("receivedAt"), i)
		r.Channel = str(col("channel"), i)
		if !ctx.IsNull(i) {
			c := &r.Context
			*c = new(contextP)
			x := *c
			x.IP, x.Locale, x.Timezone, x.UserAgent = str(field(ctx, "ip"), i), str(field(ctx, "locale"), i), str(field(ctx, "timezone"), i), str(field(ctx, "userAgent"), i)
			x.Extra = str(field(ctx, "_extra"), i)
			if !page.IsNull(i) {
				x.Page = &pageP{str(field(page, "url"), i), str(field(page, "path"), i), str(field(page, "referrer"), i), str(field(page, "title"), i), str(field(page, "search"), i)}
			}
			if !lib.IsNull(i) || !browser.IsNull(i) || !os.IsNull(i) || !device.IsNull(i) || !campaign.IsNull(i) {
				panic("activityRows: the generated events have no library, browser, os, device or campaign")
			}
		}
		r.Properties, r.Traits, r.Integrations, r.Extra = str(col("properties"), i), str(col("traits"), i), str(col("integrations"), i), str(col("_extra"), i)
		dst = append(dst, r)
	}
	return dst
}
