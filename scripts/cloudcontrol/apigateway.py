"""API Gateway (REST) references, checked the way API Gateway itself checks them.

A REST API's children name each other by bare ids: a Resource's ParentId and a Method's
ResourceId are a resource id of the same API (its RootResourceId or an
AWS::ApiGateway::Resource's ResourceId), a Stage's DeploymentId is a deployment of that API,
a Method's RequestValidatorId and RequestModels name a validator and models of it. API
Gateway answers NotFoundException for an id it does not know (the Cloud Control handler
ends FAILED NotFound), so a client that sends anything else (such as the "|"-joined Cloud
Control identifier of the resource it refers to) fails here as it would in AWS.

Only records this emulator holds are consulted (API Gateway is not moto-backed here).
"""

from __future__ import annotations

from typing import Any, Callable

REST_API = "AWS::ApiGateway::RestApi"
RESOURCE = "AWS::ApiGateway::Resource"
DEPLOYMENT = "AWS::ApiGateway::Deployment"
VALIDATOR = "AWS::ApiGateway::RequestValidator"
MODEL = "AWS::ApiGateway::Model"

# models(type_name) -> the full models (properties and read-only values) of that type.
Models = Callable[[str], list]


class MissingReference(Exception):
    """A property names an API Gateway entity that does not exist."""


def _of_api(models: Models, type_name: str, api: str) -> list[dict]:
    return [m for m in models(type_name) if str(m.get("RestApiId")) == api]


def _need(found: bool, what: str, value: Any) -> None:
    if not found:
        raise MissingReference(f"Invalid {what} identifier specified: {value!r}")


def check(type_name: str, props: dict, models: Models) -> None:
    """Raise MissingReference when `props` of a REST API child name something missing."""
    if not type_name.startswith("AWS::ApiGateway::") or type_name == REST_API:
        return
    api = props.get("RestApiId")
    if not isinstance(api, str):
        return
    apis = [m for m in models(REST_API) if str(m.get("RestApiId")) == api]
    _need(bool(apis), "REST API", api)
    resource_ids = {str(apis[0].get("RootResourceId"))} | {
        str(m.get("ResourceId")) for m in _of_api(models, RESOURCE, api)
    }
    if type_name == RESOURCE:
        _need(props.get("ParentId") in resource_ids, "Resource", props.get("ParentId"))
    if type_name == "AWS::ApiGateway::Method":
        _need(props.get("ResourceId") in resource_ids, "Resource", props.get("ResourceId"))
        validator = props.get("RequestValidatorId")
        if validator is not None:
            known = {str(m.get("RequestValidatorId")) for m in _of_api(models, VALIDATOR, api)}
            _need(validator in known, "Request Validator", validator)
        names = {str(m.get("Name")) for m in _of_api(models, MODEL, api)}
        for model in (props.get("RequestModels") or {}).values():
            _need(model in names, "Model", model)
    if type_name == "AWS::ApiGateway::Stage" and "DeploymentId" in props:
        known = {str(m.get("DeploymentId")) for m in _of_api(models, DEPLOYMENT, api)}
        _need(props["DeploymentId"] in known, "Deployment", props["DeploymentId"])
