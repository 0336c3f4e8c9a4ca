// The role each /api route needs (contract section 18), read from the one
// route table (src/http/route-table.ts): the router enforces it before any
// handler (GET /api/health checks its own, ahead of the guard). Keys are
// "<METHOD> <path>" exactly as the route is registered. A route the router
// serves without a rule here is refused for everyone (403), and the runtime
// test generated from the router's routes fails.
import type { RouteRule } from "../auth/authorize";
import { routeKey } from "./route-spec";
import { ROUTES } from "./route-table";

export const ROUTE_ROLES: Readonly<Record<string, RouteRule>> = Object.fromEntries(
  ROUTES.flatMap((route) => (route.auth.kind === "role" || route.auth.kind === "role_self" ? [[routeKey(route), route.auth.rule]] : [])),
);

/** The rule of a registered route, by its method and registered path. */
export function ruleOf(method: string, path: string): RouteRule | undefined {
  return ROUTE_ROLES[`${method} ${path}`];
}
