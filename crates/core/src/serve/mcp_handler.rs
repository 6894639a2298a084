//! The MCP profile's server as rmcp runs it: [`Served`] as rmcp's server handler, over HTTP
//! (`mcp_http`) and over a host's message transport (`mcp_session`). Each method answers from
//! `Served` (tools, the catalog, logging levels); a `tools/call` of protocol 2026-07-28 is
//! `mcp_mrtr`'s.

// MCP's logging is deprecated from 2026-07-28 on and still part of every earlier version.
#![allow(deprecated)]

use std::sync::PoisonError;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, CustomRequest, CustomResult,
    ErrorCode, ErrorData, GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler};
use serde_json::{json, Value};

use crate::serve::mcp::{call_result, client_of, not_found, EventSink, PeerCaller, Served};
use crate::serve::mcp_wire::CallKey;
use crate::tool::LOG_LEVELS;

impl ServerHandler for Served {
    fn get_info(&self) -> ServerConfig {
        let catalog = &self.inner.catalog;
        let mut caps = ServerCapabilities::builder().enable_tools().enable_logging().build();
        if catalog.offers_prompts() {
            caps.prompts = Some(Default::default());
        }
        if catalog.offers_resources() {
            let mut resources = rmcp::model::ResourcesCapability::default();
            resources.subscribe = Some(true);
            caps.resources = Some(resources);
        }
        if catalog.completes() {
            caps.completions = Some(Default::default());
        }
        let mut info = ServerConfig::new(caps);
        info.server_info = Implementation::new(self.inner.name.clone(), self.inner.version.clone());
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.inner.listed.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, ErrorData> {
        // Over stateless HTTP, a `notifications/cancelled` arrives on a POST of its own:
        // the call is findable by who sent it and its id until it ends.
        let _registered = context.extensions.get::<http::request::Parts>().and_then(|parts| {
            let id = serde_json::to_value(&context.id).ok()?;
            Some(self.inner.in_flight.register(CallKey::new(parts, &id), context.ct.clone()))
        });
        let modern = request
            .meta
            .as_ref()
            .and_then(|m| m.protocol_version())
            .or_else(|| context.meta.protocol_version())
            .or_else(|| context.peer.peer_info().map(|i| i.protocol_version.clone()))
            .is_some_and(|v| v == rmcp::model::ProtocolVersion::V_2026_07_28);
        if modern {
            return crate::serve::mcp_mrtr::call(self, request, context).await;
        }
        let (caller, sending) = PeerCaller::start(self, &context);
        let r =
            self.call(&request.name, request.arguments, context.ct.clone(), Some(caller.clone() as EventSink)).await;
        // Everything the call sent goes out before its result.
        drop(caller);
        let _ = sending.await;
        Ok(call_result(&request.name, r?).into())
    }

    async fn on_custom_request(
        &self,
        _request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<CustomResult, ErrorData> {
        Err(not_found())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<CompleteResult, ErrorData> {
        if !self.inner.catalog.completes() {
            return Err(not_found());
        }
        self.inner.catalog.complete(&request).await
    }

    // Logging is deprecated in rmcp; a client may still ask for it.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<(), ErrorData> {
        let name = serde_json::to_value(request.level).ok();
        let rank = LOG_LEVELS.iter().position(|l| name.as_ref().and_then(Value::as_str) == Some(*l)).unwrap_or(0);
        let mut levels = self.inner.levels.lock().unwrap_or_else(PoisonError::into_inner);
        levels.insert(client_of(&context), rank, |_| false);
        Ok(())
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<GetPromptResponse, ErrorData> {
        if !self.inner.catalog.offers_prompts() {
            return Err(not_found());
        }
        Ok(self.inner.catalog.get_prompt(&request.name, request.arguments).await?.into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListPromptsResult, ErrorData> {
        if !self.inner.catalog.offers_prompts() {
            return Err(not_found());
        }
        self.inner.catalog.list_prompts()
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourcesResult, ErrorData> {
        if !self.offers_resources() {
            return Err(not_found());
        }
        self.inner.catalog.list_resources()
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourceTemplatesResult, ErrorData> {
        if !self.offers_resources() {
            return Err(not_found());
        }
        self.inner.catalog.list_templates()
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ReadResourceResponse, ErrorData> {
        if !self.offers_resources() {
            return Err(not_found());
        }
        Ok(self.inner.catalog.read_resource(&request.uri).await?.into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<(), ErrorData> {
        if !self.offers_resources() {
            return Err(not_found());
        }
        if !self.inner.catalog.has_resource(&request.uri) {
            return Err(ErrorData::new(ErrorCode(-32002), "Resource not found", Some(json!({ "uri": request.uri }))));
        }
        let who = client_of(&context);
        let mut subs = self.inner.subscriptions.lock().unwrap_or_else(PoisonError::into_inner);
        let mut mine = subs.remove(&who).unwrap_or_default();
        mine.insert(request.uri);
        subs.insert(who, mine, |_| false);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<(), ErrorData> {
        if !self.offers_resources() {
            return Err(not_found());
        }
        let who = client_of(&context);
        let mut subs = self.inner.subscriptions.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(mut mine) = subs.remove(&who) {
            mine.remove(&request.uri);
            if !mine.is_empty() {
                subs.insert(who, mine, |_| false);
            }
        }
        Ok(())
    }
}
