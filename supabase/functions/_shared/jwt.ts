// JWT verification (docs/auth.md#credentials): a user's session token, or a legacy anon /
// service_role key, checked with jose. HS256 with the legacy secret, asymmetric algorithms with
// the project's JWKS, both accepted at once. Every token must carry `exp`.
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeProtectedHeader,
  errors as joseErrors,
  type JWTPayload,
  jwtVerify,
} from "jose";
import type { Config } from "./env.ts";
import { HttpError } from "./http.ts";

type Verifier = (token: string) => Promise<JWTPayload>;
const verifiers = new Map<string, Verifier>();

/**
 * What every JWT must carry and how far clocks may disagree. Supabase Auth's session tokens and the
 * legacy anon / service_role keys all carry `exp`; a token without one would never expire, so it is
 * refused. `nbf` and `iat` in the future beyond the leeway are refused: no working issuer signs
 * such a token, but a token fresh from Auth may meet a function whose clock is seconds behind.
 * `exp` gets no leeway (checked in verifyJwt): clients refresh before it, so skew costs nothing there.
 */
const CLOCK_LEEWAY_SECONDS = 30;
const VERIFY_OPTIONS = { requiredClaims: ["exp"], clockTolerance: CLOCK_LEEWAY_SECONDS };
/** The algorithms verified with the project's JWKS (HS256 is verified with the JWT secret). */
const ASYMMETRIC = ["ES256", "RS256", "EdDSA", "ES384", "ES512", "RS384", "RS512", "PS256"];

/**
 * The verifier for a project's keys: HS256 tokens with the secret, every other algorithm with the
 * JWKS. The algorithm is read from the token but only picks among the keys configured for it, so
 * an HS256 token signed with a public key (algorithm confusion) finds no key and fails.
 */
function verifierFor(jwt: Config["jwt"]): Verifier {
  const key = JSON.stringify([jwt.secret ?? null, jwt.jwks ?? null, jwt.jwksUrl ?? null]);
  let verifier = verifiers.get(key);
  if (!verifier) {
    // The secret as a key, imported once: given as bytes, jose imports it again for every token
    // (about 40 µs of CPU a request, a third of HS256's verification).
    let secret: Promise<CryptoKey> | undefined;
    const hmac = { name: "HMAC", hash: "SHA-256" };
    const secretKey = (raw: string) =>
      secret ??= crypto.subtle.importKey("raw", new TextEncoder().encode(raw), hmac, false, ["verify"]);
    const jwks = jwt.jwks
      ? createLocalJWKSet(jwt.jwks as Parameters<typeof createLocalJWKSet>[0])
      : jwt.jwksUrl
      ? createRemoteJWKSet(new URL(jwt.jwksUrl))
      : undefined;
    verifier = async (token) => {
      let alg: string | undefined;
      try {
        alg = decodeProtectedHeader(token).alg;
      } catch {
        // jose throws a TypeError here, which jwksUnavailable would read as a network failure.
        throw new joseErrors.JWTInvalid("not a JWT");
      }
      if (alg === "HS256") {
        if (!jwt.secret) throw new Error("HS256 tokens are not accepted: no JWT secret is configured");
        return (await jwtVerify(token, await secretKey(jwt.secret), { ...VERIFY_OPTIONS, algorithms: ["HS256"] }))
          .payload;
      }
      if (!ASYMMETRIC.includes(alg ?? "")) throw new joseErrors.JOSEAlgNotAllowed("alg not accepted");
      if (!jwks) throw new Error("asymmetric tokens are not accepted: no JWKS is configured");
      return (await jwtVerify(token, jwks, {
        ...VERIFY_OPTIONS,
        algorithms: ASYMMETRIC,
      }))
        .payload;
    };
    verifier = rememberingVerified(verifier);
    verifiers.set(key, verifier);
  }
  return verifier;
}

/**
 * How long, and for how many tokens, a verified token is remembered (docs/auth.md#credentials):
 * a client sends the same session token on every turn, and checking its signature again was a
 * seventh of the Deno CPU of a retrieval. No longer than jose keeps a remote JWKS (10 minutes),
 * so a key removed from the JWKS stops being accepted as late as it did before.
 */
export const VERIFIED_TOKEN_TTL_MS = 5 * 60_000;
export const VERIFIED_TOKENS_MAX = 4_096;

/**
 * The verifier, remembering the claims of the tokens it accepted, keyed by the whole token (its
 * signature included). Only a token that passed is remembered; its time claims stay checked:
 * verifyJwt checks exp and iat on every call, and an nbf that passed stays passed.
 */
function rememberingVerified(verify: Verifier): Verifier {
  const verified = new Map<string, { claims: JWTPayload; until: number }>();
  return async (token) => {
    const now = Date.now();
    const known = verified.get(token);
    if (known && known.until > now) return known.claims;
    if (known) verified.delete(token);
    const claims = Object.freeze(await verify(token)); // shared by every request that sends the token
    if (verified.size >= VERIFIED_TOKENS_MAX) verified.delete(verified.keys().next().value!); // the oldest
    verified.set(token, { claims, until: now + VERIFIED_TOKEN_TTL_MS });
    return claims;
  };
}

/** Why a correctly signed token's time claims refuse it (jose checks exp, nbf and their types). */
function claimProblem(err: joseErrors.JWTClaimValidationFailed): string {
  if (err.reason === "missing") return `the token has no '${err.claim}' claim; every JWT must expire`;
  if (err.claim === "nbf" && err.reason === "check_failed") return "the token is not valid yet (nbf is in the future)";
  return `the token's '${err.claim}' claim is invalid: ${err.message}`;
}

/**
 * Why a token could not be verified, and what to send instead: "could not be verified" alone left a
 * user with a token from another project (or a mistyped one) nothing to act on.
 */
function unverifiedReason(err: unknown): string {
  if (err instanceof joseErrors.JOSEAlgNotAllowed) {
    return "the token's algorithm (alg) is not one this server accepts: HS256 with the JWT secret, " +
      "ES256, RS256, EdDSA and their kin with the project's JWKS";
  }
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) {
    return "the token's signature does not match this server's keys: send a token issued by this project " +
      "(the server verifies HS256 tokens with JWT_SECRET / SUPABASE_JWT_SECRET, others with the project's JWKS)";
  }
  if (err instanceof joseErrors.JWKSNoMatchingKey) {
    return "no key of the project's JWKS matches the token (its kid or algorithm): send a token issued by this project";
  }
  // verifierFor's own refusals say which kind of token this server cannot verify at all.
  if (err instanceof Error && !(err instanceof joseErrors.JOSEError) && /are not accepted/.test(err.message)) {
    return `the token could not be verified: ${err.message}`;
  }
  if (err instanceof joseErrors.JWTInvalid || err instanceof joseErrors.JWSInvalid) {
    return "the token is not a valid JWT: send a user's JWT, an agent token (dvm_…) or a service_role key";
  }
  return "the token could not be verified";
}

/**
 * The project's JWKS could not be loaded (unreachable, timed out, not a key set): the server's
 * trouble, not the token's, so a 503 to send again, never a 401 telling the caller to replace a
 * token that may be fine.
 */
function jwksUnavailable(err: unknown): boolean {
  return err instanceof joseErrors.JWKSTimeout || err instanceof joseErrors.JWKSInvalid ||
    err instanceof TypeError; // fetch's network failure
}

/** The JWT's claims; 401 with a precise code and reason when it cannot be verified or accepted. */
export async function verifyJwt(token: string, config: Pick<Config, "jwt">): Promise<JWTPayload> {
  let claims: JWTPayload;
  try {
    claims = await verifierFor(config.jwt)(token);
  } catch (err) {
    if (err instanceof joseErrors.JWTExpired) throw new HttpError(401, "token_expired", "the token has expired");
    if (err instanceof joseErrors.JWTClaimValidationFailed) {
      throw new HttpError(401, "invalid_token", claimProblem(err));
    }
    if (jwksUnavailable(err)) {
      console.error("jwt: the project's JWKS could not be loaded:", err instanceof Error ? err.message : err);
      throw new HttpError(
        503,
        "auth_unavailable",
        "the server could not load the project's signing keys (JWKS): send the request again a little later",
        undefined,
        { "retry-after": "5" },
      );
    }
    throw new HttpError(401, "invalid_token", unverifiedReason(err));
  }
  // jose applied the leeway to exp too: an expired token is refused from its exp on.
  const now = Date.now() / 1000;
  if (claims.exp! <= now) throw new HttpError(401, "token_expired", "the token has expired");
  // jose checks that iat is a number, but that it is past only with maxTokenAge, which would cap
  // the life of the legacy keys; a token issued in the future is refused here.
  if (claims.iat !== undefined && claims.iat > now + CLOCK_LEEWAY_SECONDS) {
    throw new HttpError(401, "invalid_token", "the token is issued in the future (iat)");
  }
  return claims;
}
