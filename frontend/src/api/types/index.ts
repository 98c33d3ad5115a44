// The JSON the server sends, one file per section of docs/http_api.md; keep them in step with it.
export type * from "./runs";
export type * from "./overview";
export type * from "./tables";
export type * from "./timeline";
export type * from "./memory";
export type * from "./distributed";
export type * from "./diff";
export type * from "./forensics";
export type * from "./graphs";
export type * from "./hang";
