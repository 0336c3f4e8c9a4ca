// The engine as an OAuth 2.1 client of a hosted MCP server (contract section
// 21), on the v2 SDK's own OAuth functions: protected resource metadata
// (RFC 9728), then RFC 8414 or OpenID discovery (discoverOAuthServerInfo),
// PKCE S256 and the `resource` parameter (startAuthorization,
// exchangeAuthorization, refreshAuthorization), `iss` checked (RFC 9207,
// validateAuthorizationResponseIssuer), dynamic registration (registerClient).
// This module decides which client to be (a configured client_id, the
// engine's client ID metadata document, else a registered client kept per
// issuer); when a token is usable, and its refresh, are usable-token.ts's.
import {
  checkResourceAllowed,
  discoverOAuthServerInfo,
  exchangeAuthorization,
  type OAuthClientInformationMixed,
  type OAuthClientMetadata,
  type OAuthTokens,
  registerClient,
  resourceUrlFromServerUrl,
  startAuthorization,
  validateAuthorizationResponseIssuer,
} from "@modelcontextprotocol/client";
import type { HostConfig } from "../config/config";
import { redactText } from "../execution/redaction";
import { truncateUtf8 } from "../execution/mcp-result";
import type { GrantContext, OAuthStore, PendingConnect, TokenSet } from "./oauth-store";

const CLIENT_NAME = "approved-execution-engine";
const MESSAGE_MAX_BYTES = 300;

const callbackUrl = (publicUrl: string) => `${publicUrl}/oauth/callback`;
const clientMetadataUrl = (publicUrl: string) => `${publicUrl}/oauth/client.json`;

/** The engine's client ID metadata document, served at `<PUBLIC_URL>/oauth/client.json`; also what dynamic registration sends. */
export function clientMetadataDocument(publicUrl: string): OAuthClientMetadata & { client_id: string; application_type: "web" } {
  return {
    client_id: clientMetadataUrl(publicUrl),
    client_name: CLIENT_NAME,
    redirect_uris: [callbackUrl(publicUrl)],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
    application_type: "web",
  };
}

export class OAuthFlowError extends Error {
  constructor(
    readonly code: "oauth_discovery_failed" | "oauth_no_client" | "oauth_token_failed",
    message: string,
  ) {
    super(message);
  }
}

type OAuthServerSettings = HostConfig["MCP_SERVERS"][string];

/** Discovers the server's authorization server, chooses the client, and records a pending connect; the URL a person opens. */
export async function beginConnect(
  store: OAuthStore,
  publicUrl: string,
  server: string,
  settings: OAuthServerSettings,
  principal: string,
): Promise<string> {
  let info: Awaited<ReturnType<typeof discoverOAuthServerInfo>>;
  try {
    info = await discoverOAuthServerInfo(settings.url);
  } catch (error) {
    throw new OAuthFlowError("oauth_discovery_failed", `Discovering ${server}'s authorization server failed: ${errorText(error)}`);
  }
  const metadata = info.authorizationServerMetadata;
  if (metadata === undefined) {
    throw new OAuthFlowError("oauth_discovery_failed", `${server}'s authorization server publishes no RFC 8414 or OpenID metadata.`);
  }
  const resource = resourceOf(settings.url, info.resourceMetadata?.resource);
  const scope = settings.oauth?.scopes?.join(" ") || info.resourceMetadata?.scopes_supported?.join(" ") || undefined;
  const client = await clientFor(store, publicUrl, settings, metadata, info.authorizationServerUrl, scope);
  const grant: GrantContext = {
    authorizationServerUrl: info.authorizationServerUrl,
    metadata,
    client,
    resource,
    redirectUri: callbackUrl(publicUrl),
    ...(scope !== undefined ? { scope } : {}),
  };
  // The state's row keeps the verifier, so it is written once the URL (and its PKCE pair) exists, then added to it.
  const { authorizationUrl, codeVerifier } = await startAuthorization(info.authorizationServerUrl, {
    metadata,
    clientInformation: client,
    redirectUrl: grant.redirectUri,
    resource: new URL(resource),
    ...(scope !== undefined ? { scope } : {}),
  });
  const state = await store.putState({ server, principal, codeVerifier, grant });
  authorizationUrl.searchParams.set("state", state);
  return authorizationUrl.href;
}

/** The `iss` of the callback against the issuer the connect discovered (RFC 9207); false when it does not match. */
export function issuerMatches(pending: PendingConnect, iss: string | undefined): boolean {
  try {
    validateAuthorizationResponseIssuer({
      iss,
      expectedIssuer: pending.grant.metadata.issuer,
      issParameterSupported: pending.grant.metadata.authorization_response_iss_parameter_supported === true,
    });
    return true;
  } catch {
    return false;
  }
}

/** Redeems the code (PKCE verifier, `resource`) and keeps the tokens, encrypted, as the deployment's grant for the server. */
export async function finishConnect(store: OAuthStore, pending: PendingConnect, code: string, iss: string | undefined): Promise<void> {
  const { grant } = pending;
  let tokens: OAuthTokens;
  try {
    tokens = await exchangeAuthorization(grant.authorizationServerUrl, {
      metadata: grant.metadata,
      clientInformation: grant.client,
      authorizationCode: code,
      ...(iss !== undefined ? { iss } : {}),
      codeVerifier: pending.codeVerifier,
      redirectUri: grant.redirectUri,
      resource: new URL(grant.resource),
    });
  } catch (error) {
    throw new OAuthFlowError("oauth_token_failed", `The authorization server did not issue tokens: ${errorText(error)}`);
  }
  await store.saveTokens(pending.server, grant.metadata.issuer, tokenSet(tokens, grant), pending.principal);
}

/** Which client the engine is to this authorization server (contract section 21). */
async function clientFor(
  store: OAuthStore,
  publicUrl: string,
  settings: OAuthServerSettings,
  metadata: GrantContext["metadata"],
  authorizationServerUrl: string,
  scope: string | undefined,
): Promise<OAuthClientInformationMixed> {
  const configured = settings.oauth?.client_id;
  if (configured !== undefined) return { client_id: configured };
  if ((metadata as { client_id_metadata_document_supported?: unknown }).client_id_metadata_document_supported === true) {
    return { client_id: clientMetadataUrl(publicUrl) };
  }
  const known = await store.readClient(metadata.issuer);
  if (known !== null) return known;
  if (metadata.registration_endpoint === undefined) {
    throw new OAuthFlowError(
      "oauth_no_client",
      `${metadata.issuer} supports neither client ID metadata documents nor dynamic registration; set MCP_SERVERS.<server>.oauth.client_id.`,
    );
  }
  const { client_id: _ownId, ...clientMetadata } = clientMetadataDocument(publicUrl);
  let registered: OAuthClientInformationMixed;
  try {
    registered = await registerClient(authorizationServerUrl, { metadata, clientMetadata, ...(scope !== undefined ? { scope } : {}) });
  } catch (error) {
    throw new OAuthFlowError("oauth_no_client", `Dynamic registration with ${metadata.issuer} failed: ${errorText(error)}`);
  }
  await store.saveClient(metadata.issuer, registered);
  return registered;
}

/** The resource indicator: the protected resource's own `resource` when it matches the server URL, else the server URL. */
function resourceOf(serverUrl: string, advertised: string | undefined): string {
  const own = resourceUrlFromServerUrl(serverUrl);
  if (advertised !== undefined && checkResourceAllowed({ requestedResource: own, configuredResource: advertised })) return advertised;
  return own.href;
}

/** The stored form of a token response; `now` is when it was asked for (expiry counts from then). */
export function tokenSet(tokens: OAuthTokens, grant: GrantContext, now = Date.now()): TokenSet {
  return {
    accessToken: tokens.access_token,
    ...(tokens.refresh_token !== undefined ? { refreshToken: tokens.refresh_token } : {}),
    ...(tokens.expires_in !== undefined ? { expiresAtMs: now + tokens.expires_in * 1_000 } : {}),
    grant,
  };
}

/** Error text for an answer: redacted and bounded (an authorization server's text is not trusted). */
function errorText(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return truncateUtf8(redactText(truncateUtf8(text, 4 * MESSAGE_MAX_BYTES)), MESSAGE_MAX_BYTES);
}
