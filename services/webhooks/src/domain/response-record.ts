/** An answer as the delivery log keeps it: headers and body capped, so a chatty receiver cannot bloat the log. */
export interface ResponseRecord {
  /** In the order received, names lower-cased; at most MAX_RECORDED_HEADERS, each value cut at MAX_HEADER_VALUE_CHARS. */
  headers: [string, string][];
  headersTruncated: boolean;
  /** The first MAX_RECORDED_BODY_BYTES of the body, decoded as UTF-8 (a character cut in half is left out). */
  body: string;
  bodyTruncated: boolean;
}

export const MAX_RECORDED_HEADERS = 32;
export const MAX_HEADER_VALUE_CHARS = 512;
export const MAX_RECORDED_BODY_BYTES = 4 * 1024;
