//! Model selection (the `model` config option, or the legacy `session/set_model`) and `logout`
//! (gated on `agentCapabilities.auth.logout`: unsupported means nothing is sent).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use acp_host::{Host, HostConfig, ModelSwitch, SessionOptions};
use common::*;
use serde_json::json;

const T: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_come_from_the_model_config_option_and_switch_through_it() {
    let host = Host::new(HostConfig::default());
    let agent = host.spawn(mock(Some("default"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let models = session.models().expect("the mock has a model option");
    assert_eq!(models.via, ModelSwitch::ConfigOption("model".into()));
    assert_eq!(models.current.as_deref(), Some("mock-small"));
    let ids: Vec<&str> = models.available.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["mock-small", "mock-large"]);
    assert_eq!(
        models.available[1].description.as_deref(),
        Some("Slow and thorough")
    );
    session.set_model("mock-large").await.unwrap();
    assert_eq!(
        session.models().unwrap().current.as_deref(),
        Some("mock-large")
    );
    let err = session.set_model("gpt-17").await.unwrap_err();
    assert_eq!(err.kind(), "invalid_argument");
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_models_switch_through_session_set_model() {
    let host = Host::new(HostConfig::default());
    let (agent, mut fake) = fake::connect(&host).await;
    let a = agent.clone();
    let opened =
        tokio::spawn(async move { a.new_session(SessionOptions::new(common::tmp_cwd())).await });
    let req = fake.wait_method("session/new", T).await;
    fake.respond(
        &req["id"],
        json!({"sessionId": "s1", "models": {"currentModelId": "m1", "availableModels": [
            {"modelId": "m1", "name": "One"}, {"modelId": "m2", "name": "Two", "description": "big"}
        ]}}),
    )
    .await;
    let session = opened.await.unwrap().unwrap();
    let models = session.models().unwrap();
    assert_eq!(models.via, ModelSwitch::Legacy);
    assert_eq!(models.current.as_deref(), Some("m1"));
    let s = session.clone();
    let switched = tokio::spawn(async move { s.set_model("m2").await });
    let req = fake.wait_method("session/set_model", T).await;
    assert_eq!(req["params"], json!({"sessionId": "s1", "modelId": "m2"}));
    fake.respond(&req["id"], json!({})).await;
    switched.await.unwrap().unwrap();
    assert_eq!(session.models().unwrap().current.as_deref(), Some("m2"));
    // Unknown ids are refused locally.
    assert_eq!(
        session.set_model("m9").await.unwrap_err().kind(),
        "invalid_argument"
    );
    assert!(fake.recv_for(Duration::from_millis(200)).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_model_choice_is_unsupported() {
    let host = Host::new(HostConfig::default());
    let (agent, mut fake) = fake::connect(&host).await;
    let session = fake::open_session(&agent, &mut fake, "s1", &common::tmp_cwd()).await;
    assert!(session.models().is_none());
    assert_eq!(
        session.set_model("m1").await.unwrap_err().kind(),
        "unsupported"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logout_is_sent_only_when_advertised() {
    let host = Host::new(HostConfig::default());
    let (agent, mut fake) = fake::connect(&host).await;
    let err = agent.logout().await.unwrap_err();
    assert_eq!(err.kind(), "unsupported");
    assert!(err.to_string().contains("auth.logout"), "{err}");
    assert!(
        fake.recv_for(Duration::from_millis(200)).await.is_empty(),
        "nothing is sent"
    );

    let (agent, mut fake) = fake::connect_with_caps(&host, json!({"auth": {"logout": {}}})).await;
    let a = agent.clone();
    let out = tokio::spawn(async move { a.logout().await });
    let req = fake.wait_method("logout", T).await;
    fake.respond(&req["id"], json!({})).await;
    out.await.unwrap().unwrap();
}
