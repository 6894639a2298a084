//! Signing in to a remote MCP server that asks for OAuth (the MCP authorization spec): a server
//! answering 401 or 403 with a `Bearer` challenge is met with discovery (its protected-resource
//! metadata, then its authorization server's), a client identity (pre-registered, a client
//! metadata document URL, or dynamic registration), and a token, got one of three ways:
//!
//! - the authorization code with PKCE, the person signing in through the host's `waitFor`: a
//!   Request of kind `authorization` carrying the URL to open, answered with the URL the browser
//!   was sent back to (`data.url`) or its `code` and `state`;
//! - `client_credentials`, with a client secret or a signed JWT (`private_key_jwt`, ES256);
//! - cross-app access: an enterprise IdP's ID token exchanged for an ID-JAG, then for a token.
//!
//! rmcp's auth module does the protocol (discovery, registration, PKCE, the token exchange and
//! refresh, scope selection and step-up); this file decides when, asks the host, and keeps the
//! token for the connection. Tokens never appear in an error, a Request or a log.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use futures::StreamExt;
use oauth2::TokenResponse;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest, AuthorizationSession,
    ClientCredentialsConfig, OAuthClientConfig, OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture,
    OAuthHttpRedirectPolicy, OAuthHttpRequest,
};
use serde_json::{json, Map, Value};

use super::config::expand_env;
use super::keep::{Keep, KeptCredentials, KeptStates, LOGIN_TTL_MS};
use crate::callback::SharedCallback;
use crate::json::js_string;

/// The largest OAuth response body read (metadata, registration, token).
const MAX_BODY_BYTES: usize = 1024 * 1024;
/// How long one OAuth HTTP exchange may take.
const HTTP_TIMEOUT: Duration = Duration::from_secs(30);
/// Authorizations one request may cause (a first sign-in, then step-ups) before it fails.
pub(crate) const MAX_AUTHORIZATIONS: usize = 3;
/// Where the authorization server sends the browser back when no `redirectUri` is configured.
const DEFAULT_REDIRECT_URI: &str = "http://127.0.0.1/callback";

/// How a token is got.
#[derive(Clone, Debug, PartialEq)]
enum Grant {
    /// The authorization code, signed in through `waitFor`.
    Code,
    /// `client_credentials`: no person involved.
    ClientCredentials,
    /// Cross-app access (an enterprise IdP's ID token, exchanged twice).
    CrossApp,
}

/// A server's `oauth` settings, `${ENV}` placeholders expanded.
#[derive(Clone, Default)]
pub(crate) struct OAuthConfig {
    client_id: Option<String>,
    client_secret: Option<String>,
    client_metadata_url: Option<String>,
    client_name: Option<String>,
    redirect_uri: Option<String>,
    scopes: Vec<String>,
    grant: Option<Grant>,
    private_key: Option<String>,
    idp_token_endpoint: Option<String>,
    idp_issuer: Option<String>,
    idp_client_id: Option<String>,
    idp_client_secret: Option<String>,
    id_token: Option<String>,
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig").field("client_id", &self.client_id).finish_non_exhaustive()
    }
}

fn text(o: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(expand_env(s)).filter(|s| !s.is_empty())),
        Some(other) => Err(format!("oauth.{key} must be a string (got {})", crate::fn_markers::js_typeof(other))),
    }
}

impl OAuthConfig {
    /// A server's `oauth` entry: absent or `true` is the defaults (sign in through `waitFor`
    /// when the server asks), `false` turns OAuth off, an object sets it up. Anything else is
    /// named as wrong.
    pub(crate) fn from_server(cfg: &Value) -> Result<Option<OAuthConfig>, String> {
        let o = match cfg.get("oauth") {
            None | Some(Value::Null) | Some(Value::Bool(true)) => return Ok(Some(OAuthConfig::default())),
            Some(Value::Bool(false)) => return Ok(None),
            Some(Value::Object(o)) => o,
            Some(other) => {
                return Err(format!(
                    "oauth must be an object, true or false (got {})",
                    crate::fn_markers::js_typeof(other)
                ))
            }
        };
        let scopes = match o.get("scopes").or_else(|| o.get("scope")) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) => expand_env(s).split_whitespace().map(str::to_string).collect(),
            Some(Value::Array(items)) => items.iter().map(js_string).collect(),
            Some(other) => {
                return Err(format!(
                    "oauth.scopes must be a string or an array of strings (got {})",
                    crate::fn_markers::js_typeof(other)
                ))
            }
        };
        let mut c = OAuthConfig {
            client_id: text(o, "clientId")?,
            client_secret: text(o, "clientSecret")?,
            client_metadata_url: text(o, "clientMetadataUrl")?,
            client_name: text(o, "clientName")?,
            redirect_uri: text(o, "redirectUri")?,
            scopes,
            grant: None,
            private_key: text(o, "privateKey")?,
            idp_token_endpoint: None,
            idp_issuer: None,
            idp_client_id: None,
            idp_client_secret: None,
            id_token: None,
        };
        if let Some(Value::Object(idp)) = o.get("crossApp") {
            c.idp_token_endpoint = text(idp, "idpTokenEndpoint")?;
            c.idp_issuer = text(idp, "idpIssuer")?;
            c.idp_client_id = text(idp, "idpClientId")?;
            c.idp_client_secret = text(idp, "idpClientSecret")?;
            c.id_token = text(idp, "idToken")?;
        }
        if let Some(alg) = text(o, "signingAlgorithm")? {
            if alg != "ES256" {
                return Err(format!("oauth.signingAlgorithm {alg:?} is not supported (ES256 is)"));
            }
        }
        c.grant = match text(o, "grant")?.as_deref() {
            None if c.id_token.is_some() => Some(Grant::CrossApp),
            None => None,
            Some("authorization_code") => Some(Grant::Code),
            Some("client_credentials") => Some(Grant::ClientCredentials),
            Some("cross_app") | Some("urn:ietf:params:oauth:grant-type:jwt-bearer") => Some(Grant::CrossApp),
            Some(other) => {
                return Err(format!(
                    "oauth.grant {other:?} is not one of \"authorization_code\", \"client_credentials\", \"cross_app\""
                ))
            }
        };
        if c.grant == Some(Grant::CrossApp) {
            for (value, name) in [
                (&c.idp_token_endpoint, "crossApp.idpTokenEndpoint"),
                (&c.idp_issuer, "crossApp.idpIssuer"),
                (&c.idp_client_id, "crossApp.idpClientId"),
                (&c.id_token, "crossApp.idToken"),
                (&c.client_id, "clientId"),
            ] {
                if value.is_none() {
                    return Err(format!("oauth: cross-app access needs {name}"));
                }
            }
        }
        if c.grant == Some(Grant::ClientCredentials) && c.client_id.is_none() {
            return Err("oauth: client_credentials needs clientId".into());
        }
        if c.grant == Some(Grant::ClientCredentials) && c.client_secret.is_none() && c.private_key.is_none() {
            return Err("oauth: client_credentials needs clientSecret or privateKey".into());
        }
        Ok(Some(c))
    }

    fn grant(&self) -> Grant {
        self.grant.clone().unwrap_or(Grant::Code)
    }

    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone().unwrap_or_else(|| DEFAULT_REDIRECT_URI.to_string())
    }
}

/// The OAuth HTTP exchanges, on the same TLS setup as every other client of ours, with a time
/// limit and a cap on what is read.
struct Http {
    follow: reqwest::Client,
    stop: reqwest::Client,
}

impl Http {
    fn new() -> Result<Self, String> {
        let build = |policy| {
            crate::net::client_builder().timeout(HTTP_TIMEOUT).redirect(policy).build().map_err(|e| e.to_string())
        };
        Ok(Http {
            follow: build(reqwest::redirect::Policy::limited(10))?,
            stop: build(reqwest::redirect::Policy::none())?,
        })
    }
}

#[derive(Debug)]
struct TooLarge;

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OAuth response body exceeds {MAX_BODY_BYTES} bytes")
    }
}

impl std::error::Error for TooLarge {}

impl OAuthHttpClient for Http {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let client = match request.redirect_policy {
                OAuthHttpRedirectPolicy::Stop => &self.stop,
                _ => &self.follow,
            };
            let req = reqwest::Request::try_from(request.request).map_err(|e| Box::new(e) as OAuthHttpClientError)?;
            let response = client.execute(req).await.map_err(|e| Box::new(e) as OAuthHttpClientError)?;
            let mut out = http::Response::builder().status(response.status()).version(response.version());
            for (name, value) in response.headers() {
                out = out.header(name, value);
            }
            let body = read_capped(response).await.map_err(|e| e.to_string())?;
            out.body(body).map_err(|e| Box::new(e) as OAuthHttpClientError)
        })
    }
}

/// What a server's sign-in holds between requests.
#[derive(Default)]
struct State {
    /// The manager of the authorization-code flow once a client identity is set up (it keeps
    /// the registration, the token and its refresh).
    manager: Option<AuthorizationManager>,
    /// The client identity `manager` is set up with.
    client: Option<ClientRecord>,
    /// Whether what the store keeps for this server was looked at.
    restored: bool,
}

/// Why a sign-in gave no token.
enum Stop {
    /// A login was handed out for a person; the call parks on it.
    Parked,
    Failed(String),
}

/// The client identity an authorization server knows, and that server's metadata: what a
/// manager is rebuilt from in any process (kept as `client <url>` and with each login).
#[derive(serde::Serialize, serde::Deserialize, Clone)]
struct ClientRecord {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    redirect_uri: String,
    #[serde(default)]
    scopes: Vec<String>,
    metadata: AuthorizationMetadata,
}

/// One remote server's sign-in.
pub(crate) struct ServerAuth {
    url: reqwest::Url,
    server: String,
    config: OAuthConfig,
    wait_for: Option<SharedCallback>,
    /// The host's own tokens (`mcpToken`), asked first.
    token_hook: Option<SharedCallback>,
    /// Where the warnings of the load that made this go (the transport's tasks have none).
    warnings: Option<crate::warn::Sink>,
    http: Arc<Http>,
    keep: Keep,
    state: tokio::sync::Mutex<State>,
    /// The token requests go out with, as last got.
    current: std::sync::RwLock<Option<String>>,
    /// Why the last sign-in failed, to name in the connection's error.
    failure: std::sync::Mutex<Option<String>>,
    /// Logins handed out for a person (no `waitFor`): the Request each tool call parks on, by
    /// the call's JSON-RPC id.
    parked: std::sync::Mutex<HashMap<String, Value>>,
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ServerAuth {
    /// The sign-in of the server `name` at `url`, its records kept on `store` (memory when
    /// none), or none when it has OAuth turned off or sends its own `Authorization` header.
    pub(crate) fn for_server(
        name: &str,
        url: &reqwest::Url,
        cfg: &Value,
        has_authorization_header: bool,
        wait_for: Option<SharedCallback>,
        token_hook: Option<SharedCallback>,
        store: Option<&str>,
    ) -> Result<Option<Arc<ServerAuth>>, String> {
        let Some(config) = OAuthConfig::from_server(cfg)? else { return Ok(None) };
        let configured = matches!(cfg.get("oauth"), Some(Value::Object(_)));
        if has_authorization_header && !configured {
            return Ok(None);
        }
        Ok(Some(Arc::new(ServerAuth {
            url: url.clone(),
            server: name.to_string(),
            config,
            wait_for,
            token_hook,
            warnings: crate::warn::current(),
            http: Arc::new(Http::new()?),
            keep: Keep::new(store),
            state: tokio::sync::Mutex::new(State::default()),
            current: std::sync::RwLock::new(None),
            failure: std::sync::Mutex::new(None),
            parked: std::sync::Mutex::new(HashMap::new()),
        })))
    }

    fn key(&self, what: &str) -> String {
        format!("{what} {}", self.url)
    }

    fn login_key(&self, request_id: &str) -> String {
        format!("login {} {request_id}", self.url)
    }

    /// The token to send, refreshed first when it is about to expire; one a sign-in made in
    /// another process (on the same store) is taken up the first time.
    pub(crate) async fn bearer(&self) -> Option<String> {
        let held = self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        let mut state = self.state.lock().await;
        if held.is_none() && !state.restored {
            state.restored = true;
            if let Some(token) = self.hook_token(None).await {
                self.set_current(Some(token.clone()));
                return Some(token);
            }
            if let Some((m, client)) = self.restore().await {
                state.manager = Some(m);
                state.client = Some(client);
            }
        }
        if let Some(m) = &state.manager {
            if let Ok(token) = m.get_access_token().await {
                self.set_current(Some(token.clone()));
                return Some(token);
            }
        }
        drop(state);
        self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The host's token for this server (`mcpToken`), asked with the server's `challenge` when
    /// it answered with one; `None` when there is no hook or it gives no token. A hook that
    /// fails is warned about and counts as no token.
    async fn hook_token(&self, challenge: Option<&str>) -> Option<String> {
        let hook = self.token_hook.as_ref()?;
        let mut ask = Map::new();
        ask.insert("server".into(), Value::String(self.server.clone()));
        ask.insert("url".into(), Value::String(self.url.to_string()));
        if let Some(c) = challenge {
            ask.insert("challenge".into(), Value::String(c.to_string()));
        }
        match hook.call(Value::Object(ask)).await {
            Ok(Value::String(token)) if !token.is_empty() => Some(token),
            Ok(_) => None,
            Err(e) => {
                let text = format!("[toolnexus] mcpToken failed for MCP server \"{}\": {e}", self.server);
                match &self.warnings {
                    Some(sink) => sink(&text),
                    None => crate::warn::warn(&text),
                }
                None
            }
        }
    }

    /// A manager for the client kept as `client <url>`, when there is one.
    async fn restore(&self) -> Option<(AuthorizationManager, ClientRecord)> {
        if self.config.grant() != Grant::Code {
            return None;
        }
        let record: ClientRecord = serde_json::from_value(self.keep.get(&self.key("client")).await.ok()??).ok()?;
        let m = self.manager_for(&record).await.ok()?;
        Some((m, record))
    }

    /// A manager set up for `client`, its tokens and PKCE states on this server's records.
    async fn manager_for(&self, client: &ClientRecord) -> Result<AuthorizationManager, String> {
        let mut m = self.new_manager().await?;
        m.set_metadata(client.metadata.clone());
        let mut config = OAuthClientConfig::new(client.client_id.clone(), client.redirect_uri.clone())
            .with_scopes(client.scopes.clone());
        if let Some(secret) = &client.client_secret {
            config = config.with_client_secret(secret.clone());
        }
        m.configure_client(config).map_err(|e| e.to_string())?;
        Ok(m)
    }

    async fn new_manager(&self) -> Result<AuthorizationManager, String> {
        let mut m = AuthorizationManager::new_with_oauth_http_client(self.url.clone(), self.http.clone())
            .await
            .map_err(|e| e.to_string())?;
        m.set_credential_store(KeptCredentials { keep: self.keep.clone(), id: self.key("token") });
        m.set_state_store(KeptStates { keep: self.keep.clone() });
        Ok(m)
    }

    fn set_current(&self, token: Option<String>) {
        *self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner) = token;
    }

    /// Why the last sign-in failed, if one did.
    pub(crate) fn failure(&self) -> Option<String> {
        lock(&self.failure).clone()
    }

    /// The login Request the tool call of JSON-RPC id `call` handed out, once.
    pub(crate) fn take_parked(&self, call: &str) -> Option<Value> {
        lock(&self.parked).remove(call)
    }

    /// Answer the server's `challenge` (a 401 or 403 to a request sent with `sent`): a token is
    /// got, so the request can go again. A token that changed since (another request signed in
    /// meanwhile) is taken as it is. With no `waitFor`, a request that can park (a tool call)
    /// gets a login handed out instead ([`ServerAuth::take_parked`]); any other fails.
    pub(crate) async fn recover(&self, challenge: &str, sent: Option<&str>, call: Option<&str>) -> Result<(), String> {
        let mut state = self.state.lock().await;
        let current = self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        if current.is_some() && current.as_deref() != sent {
            return Ok(());
        }
        // The host's own token first: a new one is taken as it is.
        if let Some(token) = self.hook_token(Some(challenge)).await.filter(|t| Some(t.as_str()) != sent) {
            self.set_current(Some(token));
            return Ok(());
        }
        let got = match self.config.grant() {
            Grant::Code if self.wait_for.is_none() && call.is_none() => {
                return Err(format!(
                    "the server asks to sign in (WWW-Authenticate: {challenge}) and there is no waitFor to ask for it"
                ));
            }
            Grant::Code => self.authorize(&mut state, challenge, call).await,
            Grant::ClientCredentials => self.client_credentials(challenge).await.map_err(Stop::Failed),
            Grant::CrossApp => self.cross_app(challenge).await.map_err(Stop::Failed),
        };
        match got {
            Ok(token) => {
                self.set_current(Some(token));
                *lock(&self.failure) = None;
                Ok(())
            }
            Err(Stop::Parked) => Err("a sign-in is needed: the call parks on it".into()),
            Err(Stop::Failed(e)) => {
                *lock(&self.failure) = Some(e.clone());
                Err(e)
            }
        }
    }

    /// Finish a login a call parked on, when `answer` answers one of this server's: the token
    /// is got (in whichever process holds the answer, from what the records kept) and the call
    /// can go. `None` when the answer is not for a login of ours.
    pub(crate) async fn resume(&self, answer: &Value) -> Option<Result<(), String>> {
        let id = answer.get("id").and_then(Value::as_str)?;
        let login = match self.keep.take(&self.login_key(id)).await {
            Ok(found) => found?,
            Err(e) => return Some(Err(e)),
        };
        let Ok(client) = serde_json::from_value::<ClientRecord>(login) else {
            return Some(Err("the login's record is not one this version reads".into()));
        };
        let mut state = self.state.lock().await;
        let m = match self.manager_for(&client).await {
            Ok(m) => m,
            Err(e) => return Some(Err(e)),
        };
        Some(match self.finish(&m, &client, answer).await {
            Ok(token) => {
                state.manager = Some(m);
                state.client = Some(client);
                state.restored = true;
                self.set_current(Some(token));
                *lock(&self.failure) = None;
                Ok(())
            }
            Err(e) => Err(e),
        })
    }

    /// A manager with the server's authorization metadata found from `challenge`.
    async fn discover(&self, challenge: &str) -> Result<(AuthorizationManager, AuthorizationMetadata), String> {
        let mut m = self.new_manager().await?;
        let metadata = match m.resolve_metadata_from_challenge(Some(challenge)).await {
            Ok(found) => found.metadata,
            Err(AuthError::AuthorizationServerMismatch { expected_issuer, received_issuer }) => {
                self.same_origin_metadata(&expected_issuer, &received_issuer).await.ok_or_else(|| {
                    format!(
                        "Authorization server issuer mismatch: expected {expected_issuer}, received {received_issuer}"
                    )
                })?
            }
            Err(e) => return Err(e.to_string()),
        };
        m.set_metadata(metadata.clone());
        Ok((m, metadata))
    }

    /// A server of the 2025-03-26 spec serves its authorization metadata on its own origin, and
    /// some name an issuer there under a path (`/oauth`), which RFC 8414's check refuses. The
    /// metadata is taken when the issuer it names is on the very origin it came from (no other
    /// authorization server can be mixed up with it that way); anything else stays refused.
    async fn same_origin_metadata(&self, expected: &str, received: &str) -> Option<AuthorizationMetadata> {
        let origin = |u: &str| reqwest::Url::parse(u).ok().map(|u| u.origin());
        let here = origin(expected)?;
        if origin(received)? != here || origin(self.url.as_str())? != here {
            return None;
        }
        for path in ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"] {
            let mut at = self.url.clone();
            at.set_path(path);
            at.set_query(None);
            let Ok(response) = self.http.stop.get(at).header("accept", "application/json").send().await else {
                continue;
            };
            if !response.status().is_success() {
                continue;
            }
            let body = read_capped(response).await.ok()?;
            if let Ok(metadata) = serde_json::from_slice::<AuthorizationMetadata>(&body) {
                if metadata.issuer.as_deref() == Some(received) {
                    return Some(metadata);
                }
            }
        }
        None
    }

    /// The authorization-code flow: a first sign-in sets up the client identity; a later one
    /// (the token expired past refresh, or the server wants more scope) reuses it. The person is
    /// asked through `waitFor`; without one the login is kept for whoever answers it and the
    /// request parks on it.
    async fn authorize(&self, state: &mut State, challenge: &str, call: Option<&str>) -> Result<String, Stop> {
        let (manager, url, client) = match (state.manager.take(), state.client.take()) {
            (Some(m), Some(client)) => match self.step_up(m, challenge).await {
                Ok((m, url)) => (m, url, client),
                Err((m, e)) => {
                    state.manager = Some(m);
                    state.client = Some(client);
                    return Err(Stop::Failed(e));
                }
            },
            _ => self.begin(challenge).await.map_err(Stop::Failed)?,
        };
        let id = crate::types::new_pending_id();
        let request = json!({
            "id": id,
            "kind": "authorization",
            "prompt": format!("Sign in to the MCP server \"{}\" to continue", self.server),
            "url": url,
            "data": {"server": self.server, "redirectUri": client.redirect_uri},
        });
        let Some(wait_for) = self.wait_for.clone() else {
            let kept = match serde_json::to_value(&client) {
                Ok(v) => self.keep.put(&self.login_key(&id), &v, Some(LOGIN_TTL_MS)).await,
                Err(e) => Err(e.to_string()),
            };
            state.manager = Some(manager);
            state.client = Some(client);
            kept.map_err(Stop::Failed)?;
            lock(&self.parked).insert(call.unwrap_or_default().to_string(), request);
            return Err(Stop::Parked);
        };
        let answer = wait_for.call(request).await;
        let got = match answer {
            Ok(answer) => self.finish(&manager, &client, &answer).await,
            Err(e) => Err(format!("sign-in failed: {e}")),
        };
        state.manager = Some(manager);
        state.client = Some(client);
        got.map_err(Stop::Failed)
    }

    /// A first sign-in's manager, authorization URL and client: the client is the configured
    /// one, the client metadata document where the server takes those, else one registered
    /// here (so its secret is known, to keep).
    async fn begin(&self, challenge: &str) -> Result<(AuthorizationManager, String, ClientRecord), String> {
        let (mut m, metadata) = self.discover(challenge).await?;
        let c = &self.config;
        let redirect = c.redirect_uri();
        let name = c.client_name.clone().unwrap_or_else(|| "toolnexus".into());
        let takes_documents = metadata
            .additional_fields
            .get("client_id_metadata_document_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let mut request = AuthorizationRequest::new(redirect.clone()).with_client_name(name.clone());
        if !c.scopes.is_empty() {
            request = request.with_scopes(c.scopes.clone());
        }
        let (client_id, client_secret) = match (&c.client_id, &c.client_metadata_url) {
            (Some(id), _) => (id.clone(), c.client_secret.clone()),
            (None, Some(document)) if takes_documents => {
                request = request.with_client_metadata_url(document.clone());
                (document.clone(), None)
            }
            _ => {
                let scopes = if c.scopes.is_empty() { m.select_scopes(None, &[]) } else { c.scopes.clone() };
                let refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
                let registered = m
                    .register_client(&name, &redirect, &refs)
                    .await
                    .map_err(|e| format!("Dynamic registration failed: {e}"))?;
                (registered.client_id, registered.client_secret)
            }
        };
        if !(c.client_id.is_none() && takes_documents && c.client_metadata_url.is_some()) {
            request = request.with_preregistered_client(client_id.clone());
            if let Some(secret) = &client_secret {
                request = request.with_client_secret(secret.clone());
            }
        }
        let session = AuthorizationSession::new(m, request).await.map_err(|(_, e)| e.to_string())?;
        let client =
            ClientRecord { client_id, client_secret, redirect_uri: redirect, scopes: c.scopes.clone(), metadata };
        Ok((session.auth_manager, session.auth_url, client))
    }

    /// A later sign-in with the client already set up: the scopes asked for are what was granted
    /// and what the challenge names.
    async fn step_up(
        &self,
        mut m: AuthorizationManager,
        challenge: &str,
    ) -> Result<(AuthorizationManager, String), (AuthorizationManager, String)> {
        match m.resolve_metadata_from_challenge(Some(challenge)).await {
            Ok(found) => m.set_metadata(found.metadata),
            Err(e) => return Err((m, e.to_string())),
        }
        let mut scopes = m.select_scopes(None, &[]);
        let extra: Vec<String> = self.config.scopes.iter().filter(|s| !scopes.contains(s)).cloned().collect();
        scopes.extend(extra);
        let refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
        match m.get_authorization_url(&refs).await {
            Ok(url) => Ok((m, url)),
            Err(e) => Err((m, e.to_string())),
        }
    }

    /// Exchange the code `answer` carries for a token, and keep the client for later processes.
    async fn finish(&self, m: &AuthorizationManager, client: &ClientRecord, answer: &Value) -> Result<String, String> {
        let (code, csrf, issuer) = callback_of(answer)?;
        let token =
            m.exchange_code_for_token_with_issuer(&code, &csrf, issuer.as_deref()).await.map_err(|e| e.to_string())?;
        let record = serde_json::to_value(client).map_err(|e| e.to_string())?;
        self.keep.put(&self.key("client"), &record, None).await?;
        Ok(token.access_token().secret().to_string())
    }

    /// The resource the token is for: the protected-resource metadata's when the manager found
    /// it, else the server's URL.
    fn resource(&self) -> String {
        self.url.as_str().to_string()
    }

    async fn client_credentials(&self, challenge: &str) -> Result<String, String> {
        let (mut m, metadata) = self.discover(challenge).await?;
        let client_id = self.config.client_id.clone().unwrap_or_default();
        let scopes =
            if self.config.scopes.is_empty() { m.select_scopes(None, &[]) } else { self.config.scopes.clone() };
        if let Some(pem) = &self.config.private_key {
            let audience = metadata.issuer.clone().unwrap_or_else(|| metadata.token_endpoint.clone());
            let assertion = es256_assertion(&client_id, &audience, pem)?;
            let mut form = vec![
                ("grant_type", "client_credentials".to_string()),
                ("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_string()),
                ("client_assertion", assertion),
                ("resource", self.resource()),
            ];
            if !scopes.is_empty() {
                form.push(("scope", scopes.join(" ")));
            }
            return self.token_request(&metadata.token_endpoint, &form, None).await;
        }
        let config = ClientCredentialsConfig::ClientSecret {
            client_id,
            client_secret: self.config.client_secret.clone().unwrap_or_default(),
            scopes,
            resource: Some(self.resource()),
        };
        m.configure_client_credentials(&config).map_err(|e| e.to_string())?;
        let token = m.exchange_client_credentials(&config).await.map_err(|e| e.to_string())?;
        Ok(token.access_token().secret().to_string())
    }

    async fn cross_app(&self, challenge: &str) -> Result<String, String> {
        use rmcp::transport::auth::enterprise::{EmaAuthorizationServer, EmaClientAuthentication, EmaExchangeRequest};
        let (_, metadata) = self.discover(challenge).await?;
        let c = &self.config;
        let get = |v: &Option<String>| v.clone().unwrap_or_default();
        let mut idp =
            EmaAuthorizationServer::new(get(&c.idp_issuer), get(&c.idp_token_endpoint), get(&c.idp_client_id));
        if let Some(secret) = &c.idp_client_secret {
            idp = idp.with_client_authentication(EmaClientAuthentication::ClientSecretPost(oauth2::ClientSecret::new(
                secret.clone(),
            )));
        }
        let issuer = metadata.issuer.clone().unwrap_or_default();
        let mut resource_as = EmaAuthorizationServer::new(issuer, metadata.token_endpoint.clone(), get(&c.client_id));
        if let Some(secret) = &c.client_secret {
            resource_as = resource_as.with_client_authentication(EmaClientAuthentication::ClientSecretBasic(
                oauth2::ClientSecret::new(secret.clone()),
            ));
        }
        let resource = self.resource();
        let id_token = get(&c.id_token);
        let mut exchange = EmaExchangeRequest::new_with_id_token(idp, resource_as, &resource, &id_token);
        if !c.scopes.is_empty() {
            exchange = exchange.with_scopes(c.scopes.clone());
        }
        let token = exchange.exchange(self.http.as_ref(), self.http.as_ref()).await.map_err(|e| e.to_string())?;
        Ok(token.access_token.secret().to_string())
    }

    /// POST a token request (form), `basic` as HTTP Basic client authentication when given, and
    /// read `access_token` from the answer.
    async fn token_request(
        &self,
        endpoint: &str,
        form: &[(&str, String)],
        basic: Option<(&str, &str)>,
    ) -> Result<String, String> {
        let body: String = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form.iter()).finish();
        let mut req = self
            .http
            .stop
            .post(endpoint)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json")
            .body(body);
        if let Some((id, secret)) = basic {
            req = req.basic_auth(id, Some(secret));
        }
        let response =
            req.send().await.map_err(|e| format!("token request failed: {}", crate::error::with_causes(&e)))?;
        let status = response.status();
        let body = read_capped(response).await.map_err(|e| e.to_string())?;
        let answer: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if !status.is_success() {
            let error = answer.get("error").and_then(Value::as_str).unwrap_or("no error code");
            return Err(format!("the token endpoint answered HTTP {} ({error})", status.as_u16()));
        }
        match answer.get("access_token").and_then(Value::as_str) {
            Some(token) => Ok(token.to_string()),
            None => Err("the token endpoint's answer has no access_token".into()),
        }
    }
}

/// A response's body, up to [`MAX_BODY_BYTES`].
async fn read_capped(response: reqwest::Response) -> Result<Vec<u8>, OAuthHttpClientError> {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| Box::new(e) as OAuthHttpClientError)?;
        if chunk.len() > MAX_BODY_BYTES - body.len() {
            return Err(Box::new(TooLarge));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The `code`, `state` and `iss` of a sign-in's answer: `data.url` (the URL the browser was sent
/// back to, or the `Location` it was redirected to) or `data.code` with `data.state`.
fn callback_of(answer: &Value) -> Result<(String, String, Option<String>), String> {
    if answer.get("ok") != Some(&Value::Bool(true)) {
        let reason = answer.get("reason").map(js_string).unwrap_or_else(|| "not ok".into());
        return Err(format!("sign-in was not completed ({reason})"));
    }
    let data = answer.get("data").unwrap_or(&Value::Null);
    let url = match data {
        Value::String(s) => Some(s.as_str()),
        _ => data.get("url").and_then(Value::as_str),
    };
    if let Some(url) = url {
        let parsed = reqwest::Url::parse(url).map_err(|_| "the sign-in answer's data.url is not a URL".to_string())?;
        let pairs: std::collections::HashMap<String, String> = parsed.query_pairs().into_owned().collect();
        if let Some(error) = pairs.get("error") {
            return Err(format!("the authorization server refused the sign-in ({error})"));
        }
        let code = pairs.get("code").cloned().ok_or("the sign-in answer's data.url has no code")?;
        let state = pairs.get("state").cloned().ok_or("the sign-in answer's data.url has no state")?;
        return Ok((code, state, pairs.get("iss").cloned()));
    }
    let field = |k: &str| data.get(k).and_then(Value::as_str).map(str::to_string);
    match (field("code"), field("state")) {
        (Some(code), Some(state)) => Ok((code, state, field("iss"))),
        _ => Err("the sign-in answer has neither data.url nor data.code with data.state".into()),
    }
}

/// A `private_key_jwt` client assertion (RFC 7523), signed ES256 with a PKCS#8 PEM key.
fn es256_assertion(client_id: &str, audience: &str, pem: &str) -> Result<String, String> {
    use ring::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
    let b64 = base64::engine::general_purpose::STANDARD;
    let der: String = pem.lines().filter(|l| !l.starts_with("-----")).map(str::trim).collect();
    let der = b64.decode(der).map_err(|_| "oauth.privateKey is not a PEM key".to_string())?;
    let rng = ring::rand::SystemRandom::new();
    let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng)
        .map_err(|_| "oauth.privateKey is not a PKCS#8 P-256 key (ES256)".to_string())?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let url = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let header = url.encode(br#"{"alg":"ES256","typ":"JWT"}"#);
    let jti: String = (0..16).map(|_| format!("{:02x}", rand::random::<u8>())).collect();
    let claims = json!({"iss": client_id, "sub": client_id, "aud": audience, "iat": now, "exp": now + 300, "jti": jti});
    let input = format!("{header}.{}", url.encode(crate::json::to_string(&claims)));
    let signature = key.sign(&rng, input.as_bytes()).map_err(|_| "signing the client assertion failed".to_string())?;
    Ok(format!("{input}.{}", url.encode(signature.as_ref())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_and_wrong_ones_are_named() {
        assert!(OAuthConfig::from_server(&json!({"url": "x"})).unwrap().is_some());
        assert!(OAuthConfig::from_server(&json!({"oauth": false})).unwrap().is_none());
        let e = OAuthConfig::from_server(&json!({"oauth": 3})).unwrap_err();
        assert_eq!(e, "oauth must be an object, true or false (got number)");
        let e = OAuthConfig::from_server(&json!({"oauth": {"grant": "client_credentials"}})).unwrap_err();
        assert_eq!(e, "oauth: client_credentials needs clientId");
        let c = OAuthConfig::from_server(&json!({"oauth": {"scopes": "a b", "clientId": "c"}})).unwrap().unwrap();
        assert_eq!(c.scopes, ["a", "b"]);
        assert_eq!(c.grant(), Grant::Code);
        let e = OAuthConfig::from_server(&json!({"oauth": {"clientId": 1}})).unwrap_err();
        assert_eq!(e, "oauth.clientId must be a string (got number)");
    }

    #[test]
    fn an_answer_gives_the_code_and_state_or_says_what_it_lacks() {
        let ok = json!({"id": "x", "ok": true, "data": {"url": "http://127.0.0.1/callback?code=c1&state=s1"}});
        assert_eq!(callback_of(&ok).unwrap(), ("c1".into(), "s1".into(), None));
        let ok = json!({"ok": true, "data": {"code": "c2", "state": "s2", "iss": "https://as"}});
        assert_eq!(callback_of(&ok).unwrap(), ("c2".into(), "s2".into(), Some("https://as".into())));
        let no = json!({"ok": false, "reason": "declined"});
        assert_eq!(callback_of(&no).unwrap_err(), "sign-in was not completed (declined)");
        let refused = json!({"ok": true, "data": {"url": "http://127.0.0.1/callback?error=access_denied&state=s"}});
        assert_eq!(callback_of(&refused).unwrap_err(), "the authorization server refused the sign-in (access_denied)");
        assert!(callback_of(&json!({"ok": true})).unwrap_err().contains("neither"));
    }

    #[test]
    fn an_es256_assertion_verifies_with_the_public_key() {
        use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING};
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(pkcs8.as_ref());
        let pem = format!("-----BEGIN PRIVATE KEY-----\n{b64}\n-----END PRIVATE KEY-----\n");
        let jwt = es256_assertion("client-1", "https://as.example", &pem).unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let url = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let claims: Value = serde_json::from_slice(&url.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["iss"], "client-1");
        assert_eq!(claims["aud"], "https://as.example");
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
        let public = ring::signature::UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, key.public_key().as_ref());
        public.verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &url.decode(parts[2]).unwrap()).unwrap();
        assert!(es256_assertion("c", "a", "not a key").unwrap_err().contains("privateKey"));
    }
}
