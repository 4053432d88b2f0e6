/**
 * The protocol's types as the app names them.
 *
 * Every payload and parameter type is generated from `sds_jupyter/protocol/types.py`
 * and the service's request table (`make types` writes `payloads.gen.ts`); this
 * module re-exports them and adds only the app's own names: shorter names for a
 * few replies, and the request helpers. A new request is a method in the Python
 * request table and its payload TypedDict; nothing here changes.
 */

import type { ParamTypes, ReplyTypes } from './payloads.gen';
import { GENERATED_REQUESTS, GENERATED_WRITE_REQUESTS } from './payloads.gen';

export type * from './payloads.gen';

export type {
  ChangesData as Changes,
  ContentsData as Contents,
  FigureSummary as Figure,
  FiguresData as Figures,
  HistoryData as History,
  ResultSummary as Result,
  ResultTableSummary as ResultTable,
  ResultsData as Results,
  TreeData as Tree
} from './payloads.gen';

/** Request name → [params, data]. */
export type Requests = { [N in RequestName]: [ParamTypes[N], ReplyTypes[N]] };

export type RequestName = keyof ReplyTypes;
export type Params<N extends RequestName> = ParamTypes[N];
export type Data<N extends RequestName> = ReplyTypes[N];

/** The request names, in the order of the Python request table. */
export const REQUESTS: readonly RequestName[] = GENERATED_REQUESTS;

/** The requests that write a new version (REST posts them; a GET never reaches them). */
export const WRITE_REQUESTS: readonly RequestName[] = GENERATED_WRITE_REQUESTS;
