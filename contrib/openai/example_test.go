package openai_test

import (
	"context"
	"log"

	"github.com/bgexec/bgexec"
	bgopenai "github.com/bgexec/bgexec/contrib/openai"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// A Responses API loop that offers the function tools and the local shell
// tool, and answers their calls through bgexec. (Compiled, not run: it
// calls the API.)
func Example() {
	ctx := context.Background()
	reg, err := bgexec.NewRegistry(bgexec.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close(ctx)
	sc := reg.Scope("agent")

	client := sdk.NewClient() // reads OPENAI_API_KEY
	tools := append(bgopenai.ResponseTools(), responses.ToolUnionParam{OfShell: &responses.FunctionShellToolParam{}})
	params := responses.ResponseNewParams{
		Model:             sdk.ChatModelGPT5_5,
		Input:             responses.ResponseNewParamsInputUnion{OfString: sdk.String("Run the tests.")},
		Tools:             tools,
		ParallelToolCalls: sdk.Bool(false), // a list sees what an earlier exec started
	}
	for {
		resp, err := client.Responses.New(ctx, params)
		if err != nil {
			log.Fatal(err)
		}
		var answers responses.ResponseInputParam
		for _, item := range resp.Output {
			var answer responses.ResponseInputItemUnionParam
			switch item.Type {
			case "function_call":
				answer, err = bgopenai.CallResponse(ctx, sc, item.AsFunctionCall())
			case "shell_call":
				answer, err = bgopenai.Shell(ctx, sc, item.AsShellCall())
			default:
				continue
			}
			if err != nil {
				log.Fatal(err)
			}
			answers = append(answers, answer)
		}
		if len(answers) == 0 {
			log.Print(resp.OutputText())
			return
		}
		// The next turn continues this response with the answers.
		params.PreviousResponseID = sdk.String(resp.ID)
		params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: answers}
	}
}
